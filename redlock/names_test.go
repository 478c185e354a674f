package redlock_test

import (
	"testing"

	"github.com/redlockgo/redlock/internal/keyspace"
)

// The names of the keys the library writes beside a lock key, for tests
// that look at the nodes: built by the library's own naming (keyspace,
// the same on standalone and cluster nodes), never spelled out here.
var names keyspace.Standalone

// queueKey is where the nodes keep key's queue of waiters.
func queueKey(key string) string { return names.Queue(key)[1] }

// queueEntriesKey is the hash of the entries of key's queue.
func queueEntriesKey(key string) string { return names.Queue(key)[3] }

// queueLeasesKey is the zset of the leases of key's queue.
func queueLeasesKey(key string) string { return names.Queue(key)[2] }

// readersKey is the zset of key's readers.
func readersKey(key string) string { return names.Readers(key) }

// heldKey is key's holder marker under a lock-delay.
func heldKey(key string) string { return names.Held(key) }

// electionKey is the lock key of the election called name.
func electionKey(t testing.TB, name string) string {
	t.Helper()
	k, err := keyspace.Election(name)
	if err != nil {
		t.Fatalf("election %q: %v", name, err)
	}
	return k
}

// leaderKey is the leader record of the election called name.
func leaderKey(t testing.TB, name string) string {
	t.Helper()
	return names.Leader(electionKey(t, name))
}
