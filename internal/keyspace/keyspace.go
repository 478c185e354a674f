// Package keyspace builds every Redis key the library writes, and refuses the
// names a caller gives that could reach one of them.
//
// A lock key is the caller's key, unchanged (so redis-cli, Status and the
// peers' tools see it as it is). Everything the library keeps beside it (a
// companion, named by one of the words below) and every marker of the
// library's on a node (the constants below) is named under one reserved
// prefix, Prefix ("redlock:"); this file is the one list of them, which
// docs/design.md, "Key names", shows to users. Companions are named by
// keyslot.Companion, an injective encoding that keeps a companion in its
// key's Redis Cluster slot; the same names serve standalone nodes. An
// election's lock key is a companion of its name.
//
// Check is the guarantee: every key or election name that does not begin
// with Prefix is accepted, and can reach no name of the library's, which
// all begin with it. So a lock "x" and a lock "x:leader", an election "x"
// and an election "x:leader", a lock "report" and an election "report" are
// independent.
package keyspace

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redlockgo/redlock/internal/keyslot"
)

// The companions of a lock key, by the word that names them. queue+":watch"
// and queue+":holds" are named after the queue's name: release.lua and
// owned_release.lua derive them from KEYS[2].
const (
	fence   = "fence"         // the fence counter (fencing.go)
	queue   = "queue"         // the waiters' queue (enqueue.lua)
	leases  = "queue:leases"  // the queue's leases
	entries = "queue:entries" // the queue's entries
	left    = "queue:left"    // the waiters that left it
	held    = "held"          // the holder marker of a lock-delay
	readers = "readers"       // the readers of a read/write lock
	leader  = "leader"        // an election's leader record
	watch   = ":watch"        // after the queue: the watch set
	holds   = ":holds"        // after the queue: an owner's holds
)

// Prefix begins every key the library writes beside a caller's lock keys.
const Prefix = keyslot.Prefix

// election is the companion word of an election's lock key; holder, of
// the CLI's holder record.
const (
	election = "election"
	holder   = "holder"
)

// The library's markers on a node.
const (
	// FreshStart is the fresh-start declaration of a standalone node: its
	// value is the run_id of the run it declares fresh.
	FreshStart = "redlock:fresh-start"
	// reign begins the record of a Redis Cluster shard master's reign.
	reign = "redlock:reign"
	// Ceiling is a standalone node's lease ceiling (scripts' ceiling.lua):
	// at least the TTL of every lease the node granted that may still be
	// valid, alive at least as long as each.
	Ceiling = "redlock:ceiling"
	// MaxTTL is a standalone node's record of the longest TTL its clients
	// may ask for (redlock.WithMaxTTL), in ms, with no TTL of its own:
	// raised with the lease ceiling (scripts' ceiling.lua), never lowered,
	// the largest winning. A Client whose own bound is smaller quarantines
	// a restarted node for the recorded one (internal/node, bound.go).
	MaxTTL = "redlock:max-ttl"
)

// ErrReserved is wrapped by Check's error for a key of the library's own.
var ErrReserved = errors.New("the name is reserved")

// Check returns nil when key may be a caller's lock key: not empty, and
// not under Prefix. Its error names the prefix and wraps ErrReserved.
func Check(key string) error { return check("key", key) }

// Election returns the lock key of the election called name, or an error
// when name is empty or under Prefix (wrapping ErrReserved).
func Election(name string) (string, error) {
	if err := check("election name", name); err != nil {
		return "", err
	}
	return keyslot.Companion(name, election), nil
}

// check refuses the empty name and a name under Prefix; what says what
// the name is ("key", "election name").
func check(what, name string) error {
	if name == "" {
		return errors.New("empty " + what)
	}
	if strings.HasPrefix(name, Prefix) {
		return fmt.Errorf("%s %q begins with %q, which is reserved for the library's own keys: %w", what, name, Prefix, ErrReserved)
	}
	return nil
}

// Naming gives the companion keys of a lock key on one node: Standalone or
// Cluster, chosen once per node (internal/node). Every script's KEYS are
// named through a Naming.
type Naming interface {
	// Fence returns the name of key's fence counter.
	Fence(key string) string
	// Queue returns the KEYS of Enqueue and Release for key: the key, its
	// queue, the queue's leases, entries and departed waiters.
	Queue(key string) []string
	// Readers returns the name of the zset of key's readers (rlock_*.lua).
	Readers(key string) string
	// Held returns the name of key's holder marker under a lock-delay.
	Held(key string) string
	// Watch returns the name of key's watch set.
	Watch(key string) string
	// Holds returns the name of the holds of key held by an owner.
	Holds(key string) string
	// Leader returns the name of the leader record of the election key key.
	Leader(key string) string
	// Ceiling returns the name of the node's lease ceiling, given last in
	// the KEYS of every script that grants or extends a lease; "" where a
	// node keeps none (a Redis Cluster, whose restarts the shard check
	// judges).
	Ceiling() string
}

// Standalone is the naming of a standalone node: the companions of
// keyslot.Companion, as on a Redis Cluster, and the node's lease ceiling.
type Standalone struct{}

// Cluster is the naming of a node that is a Redis Cluster: names in the
// key's hash slot (keyslot.Companion), so that every script on a key runs
// on the one shard that owns it; it keeps no lease ceiling.
type Cluster struct{}

func (Standalone) companion(key, word string) string { return keyslot.Companion(key, word) }

// Fence implements Naming.
func (s Standalone) Fence(key string) string { return s.companion(key, fence) }

// Queue implements Naming.
func (s Standalone) Queue(key string) []string {
	return []string{key, s.companion(key, queue), s.companion(key, leases), s.companion(key, entries), s.companion(key, left)}
}

// Readers implements Naming.
func (s Standalone) Readers(key string) string { return s.companion(key, readers) }

// Held implements Naming.
func (s Standalone) Held(key string) string { return s.companion(key, held) }

// Watch implements Naming.
func (s Standalone) Watch(key string) string { return s.companion(key, queue) + watch }

// Holds implements Naming.
func (s Standalone) Holds(key string) string { return s.companion(key, queue) + holds }

// Leader implements Naming.
func (s Standalone) Leader(key string) string { return s.companion(key, leader) }

// Ceiling implements Naming.
func (Standalone) Ceiling() string { return Ceiling }

// Fence implements Naming.
func (Cluster) Fence(key string) string { return keyslot.Companion(key, fence) }

// Queue implements Naming.
func (Cluster) Queue(key string) []string {
	return []string{key, keyslot.Companion(key, queue), keyslot.Companion(key, leases),
		keyslot.Companion(key, entries), keyslot.Companion(key, left)}
}

// Readers implements Naming.
func (Cluster) Readers(key string) string { return keyslot.Companion(key, readers) }

// Held implements Naming.
func (Cluster) Held(key string) string { return keyslot.Companion(key, held) }

// Watch implements Naming.
func (Cluster) Watch(key string) string { return keyslot.Companion(key, queue) + watch }

// Holds implements Naming.
func (Cluster) Holds(key string) string { return keyslot.Companion(key, queue) + holds }

// Leader implements Naming.
func (Cluster) Leader(key string) string { return keyslot.Companion(key, leader) }

// Ceiling implements Naming: a cluster node keeps none.
func (Cluster) Ceiling() string { return "" }

// ShardFreshStart returns the fresh-start declaration of the Redis Cluster
// shard whose slot tag is tag (shardwatch).
func ShardFreshStart(tag string) string { return FreshStart + "{" + tag + "}" }

// Reign returns the record of the reign of the master of the Redis Cluster
// shard whose slot tag is tag (shardwatch's reign.lua builds the same name).
func Reign(tag string) string { return reign + "{" + tag + "}" }

// Lasting reports whether name is one of the keys the library writes
// without a TTL, because each must outlive every lock: a fence counter
// (an election's term counter is its key's fence counter), which must
// never go back; a fresh-start declaration of a node or shard, which names
// a run and is void once the node restarts; and a node's recorded max TTL.
// Every other key the library writes has a TTL, set by the script that
// writes it (the ceiling and a shard master's reign record too). The
// audits of the real-Redis tests and of the chaos run (redistest.Untimed)
// hold every node to it.
func Lasting(name string) bool {
	return strings.HasPrefix(name, Prefix) && strings.HasSuffix(name, ":"+fence) ||
		name == FreshStart || strings.HasPrefix(name, FreshStart+"{") || name == MaxTTL
}

// words are the companion words, longest first where one ends another.
var words = []string{queue + watch, queue + holds, leases, entries, left, fence, queue, held, readers, leader, holder, election}

// Shape returns name with the caller's part replaced, for a report that
// counts keys by kind: "K" for a caller's key, "redlock:{K}:queue:entries"
// for a companion ("redlock:{ELECTION}:leader" for one of an election's
// key), markers as they are with a shard's tag replaced by "n".
func Shape(name string) string {
	for _, m := range []string{FreshStart, reign} {
		if strings.HasPrefix(name, m+"{") {
			return m + "{n}"
		}
	}
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return "K"
	}
	for _, w := range words {
		if key, ok := strings.CutSuffix(rest, ":"+w); ok {
			kind := "K"
			if strings.Contains(key, Prefix) && strings.HasSuffix(key, ":"+election) {
				kind = "ELECTION"
			}
			return Prefix + "{" + kind + "}:" + w
		}
	}
	return name // a marker
}

// Holder returns the name of the CLI's holder record of key (who runs
// under the lock), the same on every kind of node.
func Holder(key string) string { return keyslot.Companion(key, holder) }
