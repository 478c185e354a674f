// Package keyspace builds every Redis key the library writes, and refuses the
// names a caller gives that could reach one of them.
//
// A lock key is the caller's key, unchanged (so redis-cli, Status and the
// peers' tools see it as it is). Everything the library keeps beside it is a
// companion, named from the key by one of two namings:
//
//   - Standalone (and, on a Redis Cluster node, a key with a hash tag): the
//     key followed by a reserved suffix, key + ":fence", key + ":queue", ...;
//   - Cluster, for a key without a hash tag: a reserved name followed by the
//     key in braces, "fence{" + key + "}", ..., so that the companion lands
//     in the key's slot (keyslot.Companion).
//
// The library's own markers begin with "redlock:" followed by a reserved
// word, and an election's lock key is "election:" + its name.
//
// Check is the guarantee: a key it accepts is none of those names, so no
// caller's key, no key of a multi-lock and no election name can be another
// object's companion, marker or election key. The reserved forms are listed
// in Suffixes, Prefixes and Markers; TestNoKeyReachesACompanion builds every
// name the library writes and checks that Check refuses each.
//
// Why that suffices: every companion of every key ends with one of Suffixes
// or begins with one of Prefixes, so a key that does neither is no
// companion. Two companions of different keys never meet either: no suffix
// ends another one (so key1 + s1 == key2 + s2 means s1 == s2 and key1 ==
// key2), the braced forms end with '}' (or "}:watch", "}:holds"), which no
// suffix form does, and within the braced forms the first '}' after the
// name ends the key's tag (keyslot.Companion).
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

// ElectionPrefix begins the lock key of every election.
const ElectionPrefix = "election:"

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

// Suffixes are the endings of the companions of the first naming (and, on a
// Redis Cluster node, of a key with a hash tag). Check refuses a key with
// any of them.
var Suffixes = []string{
	":" + fence, ":" + queue, ":" + leases, ":" + entries, ":" + left,
	":" + queue + watch, ":" + queue + holds, ":" + held, ":" + readers, ":" + leader,
}

// Prefixes are the beginnings of the companions of a key without a hash tag
// on a Redis Cluster node. Check refuses a key with any of them.
var Prefixes = []string{
	fence + "{", queue + "{", leases + "{", entries + "{", left + "{",
	held + "{", readers + "{", leader + "{",
}

// Markers are the beginnings of the library's markers (the fresh-start
// declarations of a node and of a cluster shard, a shard master's reign, a
// node's lease ceiling, its recorded max TTL). Check refuses a key with any
// of them.
var Markers = []string{FreshStart, reign, Ceiling, MaxTTL}

// ErrReserved is wrapped by Check's error for a key of the library's own.
var ErrReserved = errors.New("the name is reserved")

// Check returns nil when key may be a caller's lock key: not empty, not an
// election's key (ElectionPrefix), and none of the reserved forms. Its error
// names the form and wraps ErrReserved.
func Check(key string) error {
	if strings.HasPrefix(key, ElectionPrefix) {
		return fmt.Errorf("key %q begins with %q, which is reserved for elections (Campaign): %w", key, ElectionPrefix, ErrReserved)
	}
	return checkForm(key)
}

// Election returns the lock key of the election called name, or an error
// when name is empty or the key would be reserved.
func Election(name string) (string, error) {
	if name == "" {
		return "", errors.New("empty election name")
	}
	key := ElectionPrefix + name
	if err := checkForm(key); err != nil {
		return "", fmt.Errorf("election name %q: %w", name, err)
	}
	return key, nil
}

// checkForm refuses the empty key and the reserved forms.
func checkForm(key string) error {
	if key == "" {
		return errors.New("empty key")
	}
	for _, s := range Suffixes {
		if strings.HasSuffix(key, s) {
			return fmt.Errorf("key %q ends with %q, which names another key's companion: %w", key, s, ErrReserved)
		}
	}
	for _, p := range Prefixes {
		if strings.HasPrefix(key, p) {
			return fmt.Errorf("key %q begins with %q, which names another key's companion on a Redis Cluster: %w", key, p, ErrReserved)
		}
	}
	for _, m := range Markers {
		if strings.HasPrefix(key, m) {
			return fmt.Errorf("key %q begins with %q, a marker of the library's: %w", key, m, ErrReserved)
		}
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

// Standalone is the naming of a standalone node: key + ":" + word, the
// names earlier versions used, kept as they are (a fence counter must
// survive an upgrade).
type Standalone struct{}

// Cluster is the naming of a node that is a Redis Cluster: names in the
// key's hash slot (keyslot.Companion), so that every script on a key runs
// on the one shard that owns it. For a key with a hash tag the two agree.
type Cluster struct{}

func (Standalone) companion(key, word string) string { return key + ":" + word }

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
// never go back, and a fresh-start declaration of a node or shard, which
// names a run and is void once the node restarts. Every other key the
// library writes has a TTL, set by the script that writes it (the ceiling
// and a shard master's reign record too). The audits of the real-Redis
// tests and of the chaos run (redistest.Untimed) hold every node to it.
func Lasting(name string) bool {
	return strings.HasSuffix(name, ":"+fence) || strings.HasPrefix(name, fence+"{") ||
		name == FreshStart || strings.HasPrefix(name, FreshStart+"{")
}

// Shape returns name with the caller's part replaced, for a report that
// counts keys by kind: "K" for a lock key, "K:queue:entries" or
// "queue:entries{K}" for a companion, "election:NAME" for an election's key
// (and "election:NAME:leader" for its record), markers as they are with a
// shard's tag replaced by "n".
func Shape(name string) string {
	for _, m := range []string{FreshStart, reign} {
		if strings.HasPrefix(name, m+"{") {
			return m + "{n}"
		}
	}
	if name == FreshStart || name == Ceiling {
		return name
	}
	base, form := name, "%s"
	if s := longestSuffix(name); s != "" {
		base, form = strings.TrimSuffix(name, s), "%s"+s
	} else if p := longestPrefix(name); p != "" {
		rest := strings.TrimPrefix(name, p)
		end := "}"
		for _, w := range []string{watch, holds} {
			if strings.HasSuffix(rest, "}"+w) {
				end = "}" + w
			}
		}
		base, form = strings.TrimSuffix(rest, end), p+"%s"+end
	}
	if strings.HasPrefix(base, ElectionPrefix) {
		return fmt.Sprintf(form, ElectionPrefix+"NAME")
	}
	return fmt.Sprintf(form, "K")
}

// longestSuffix returns the longest of Suffixes that name ends with, or "".
func longestSuffix(name string) string {
	best := ""
	for _, s := range Suffixes {
		if strings.HasSuffix(name, s) && len(s) > len(best) {
			best = s
		}
	}
	return best
}

// longestPrefix returns the longest of Prefixes that name begins with, or
// "".
func longestPrefix(name string) string {
	best := ""
	for _, p := range Prefixes {
		if strings.HasPrefix(name, p) && len(p) > len(best) {
			best = p
		}
	}
	return best
}
