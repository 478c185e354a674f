// Package scripts holds the Lua scripts the lock runs on each node. Each
// .lua file states its contract in its header comment; watch.lua holds the
// functions that the scripts which register or wake watchers share, and
// kind.lua the one that the acquisitions share to refuse a key of another
// kind; each is prepended to the scripts that use it.
package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/pool"
)

var (
	//go:embed release.lua
	releaseSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed status.lua
	statusSrc string
	//go:embed acquire_fenced.lua
	acquireFencedSrc string
	//go:embed fence_raise.lua
	fenceRaiseSrc string
	//go:embed enqueue.lua
	enqueueSrc string
	//go:embed fence_read.lua
	fenceReadSrc string
	//go:embed acquire_delay.lua
	acquireDelaySrc string
	//go:embed watch.lua
	watchSrc string
	//go:embed kind.lua
	kindSrc string
)

// OtherKind is the first element of the reply of Enqueue, RLockAcquire,
// PermitAcquire and AcquireAll when a key holds another kind of lock; the
// kind's name follows (kind.lua).
const OtherKind = -1

// TakeDelayed is the first element of the reply of RLockAcquire,
// PermitAcquire and AcquireAll when the lock-delay refuses the key; the
// delay left in ms follows (and, for AcquireAll, the key's index).
const TakeDelayed = 2

var (
	// Release removes the caller from the key's queue, deletes the key only
	// while it holds the caller's token, and then hands it to the next
	// waiter in the queue.
	Release = pool.NewScript(watchSrc + releaseSrc)
	// Extend resets the key's TTL only while it holds the caller's token.
	Extend = pool.NewScript(extendSrc)
	// Status returns the key's value and remaining TTL.
	Status = pool.NewScript(statusSrc)
	// AcquireFenced sets the key like SET NX PX and reads its fence counter.
	AcquireFenced = pool.NewScript(acquireFencedSrc)
	// FenceRaise raises the fence counter while the key holds the token.
	FenceRaise = pool.NewScript(fenceRaiseSrc)
	// Enqueue takes a free key for the head of its queue, or queues the
	// caller.
	Enqueue = pool.NewScript(kindSrc + enqueueSrc)
	// FenceRead reads the fence counter while the key holds the token.
	FenceRead = pool.NewScript(fenceReadSrc)
	// AcquireDelay sets the key like SET NX PX, and its holder marker,
	// unless the key is in its lock-delay.
	AcquireDelay = pool.NewScript(acquireDelaySrc)
)

// AcquireDelay's reply codes; AcquireFenced answers AcquireDelayed too.
const (
	AcquireHeld    = 0
	AcquireSet     = 1
	AcquireDelayed = -1
)

// Enqueue's reply codes.
const (
	EnqueueQueued  = 0
	EnqueueSet     = 1
	EnqueueGranted = 2
	EnqueueLeft    = 3
)

// Extend's replies.
const (
	ExtendAbsent   = -1
	ExtendTaken    = 0
	ExtendExtended = 1
)

// Keys returns the KEYS of Enqueue and Release for the lock key: the key,
// then its queue, the queue's leases, its entries and the waiters that left
// it. The companion keys are named after the key, so that a key with a hash
// tag keeps them in its slot.
func Keys(key string) []string {
	q := key + ":queue"
	return []string{key, q, q + ":leases", q + ":entries", q + ":left"}
}

// ClusterKeys is Keys for a node that is a Redis Cluster: the companion keys
// are named by keyslot.Companion, in the key's hash slot. For a key with a
// hash tag they are the names Keys gives.
func ClusterKeys(key string) []string {
	keys := []string{key, "", "", "", ""}
	for i, name := range []string{"queue", "queue:leases", "queue:entries", "queue:left"} {
		keys[i+1] = keyslot.Companion(key, name)
	}
	return keys
}

// HeldKey returns the name of key's holder marker, which a lock-delay keeps
// (acquire_delay.lua): named after the key, as Keys names its queue.
func HeldKey(key string) string { return key + ":held" }

// ClusterHeldKey is HeldKey for a node that is a Redis Cluster, in the key's
// hash slot (keyslot.Companion).
func ClusterHeldKey(key string) string { return keyslot.Companion(key, "held") }

// WatchKey returns the name of the lock key's watch set (watch.lua): the
// channels of the Clients blocked in LockAll, RLock or AcquirePermit on the
// key, which an Unlock that leaves the key free wakes. It is the key's
// queue (Keys) followed by ":watch": release.lua, whose KEYS after the
// queue's are the lock-delay's, derives it from KEYS[2], in the same slot.
func WatchKey(key string) string { return Keys(key)[1] + ":watch" }

// ClusterWatchKey is WatchKey for a node that is a Redis Cluster: its queue
// (ClusterKeys) followed by ":watch", which keeps the queue's hash tag and so
// the key's slot.
func ClusterWatchKey(key string) string { return keyslot.Companion(key, "queue") + ":watch" }
