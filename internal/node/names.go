package node

import (
	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/scripts"
)

// Names gives the companion keys of a lock key on one node. A node's Names
// is chosen once, when the Set is built, from what its Pool says it is
// (pool.Cluster): on a standalone node the names built from the key
// (key+":fence", key+":queue", ...), which earlier versions used and which
// stay as they are; on a node that is a Redis Cluster, names in the key's
// hash slot (keyslot.Companion), so that every script on a key runs on the
// one shard that owns it. For a key with a hash tag the two agree. Every
// script's KEYS are named through a Names.
type Names interface {
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
}

// Standalone is the naming of a standalone node.
type Standalone struct{}

// Cluster is the naming of a node that is a Redis Cluster.
type Cluster struct{}

// FenceKey returns the fence counter's name on a standalone node.
func FenceKey(key string) string { return key + ":fence" }

// ClusterFenceKey returns the fence counter's name on a Redis Cluster node:
// a name in the key's hash slot, so that one script can set the key and
// read the counter. For a key with a hash tag, such as "{orders}:42", it is
// FenceKey's name; for a key without one, such as "orders:42", it is
// "fence{orders:42}".
func ClusterFenceKey(key string) string { return keyslot.Companion(key, "fence") }

// Fence implements Names.
func (Standalone) Fence(key string) string { return FenceKey(key) }

// Queue implements Names.
func (Standalone) Queue(key string) []string { return scripts.Keys(key) }

// Readers implements Names.
func (Standalone) Readers(key string) string { return scripts.ReadersKey(key) }

// Held implements Names.
func (Standalone) Held(key string) string { return scripts.HeldKey(key) }

// Watch implements Names.
func (Standalone) Watch(key string) string { return scripts.WatchKey(key) }

// Holds returns the name of the holds of key held by an owner (WithOwner).
func (Standalone) Holds(key string) string { return scripts.HoldsKey(key) }

// Leader implements Names: key + ":leader", as the queue and the fence
// counter are named.
func (Standalone) Leader(key string) string { return key + ":leader" }

// Fence implements Names.
func (Cluster) Fence(key string) string { return ClusterFenceKey(key) }

// Queue implements Names.
func (Cluster) Queue(key string) []string { return scripts.ClusterKeys(key) }

// Readers implements Names.
func (Cluster) Readers(key string) string { return scripts.ClusterReadersKey(key) }

// Held implements Names.
func (Cluster) Held(key string) string { return scripts.ClusterHeldKey(key) }

// Watch implements Names.
func (Cluster) Watch(key string) string { return scripts.ClusterWatchKey(key) }

// Holds returns the name of the holds of key held by an owner, in key's
// slot.
func (Cluster) Holds(key string) string { return scripts.ClusterHoldsKey(key) }

// Leader implements Names.
func (Cluster) Leader(key string) string { return keyslot.Companion(key, "leader") }
