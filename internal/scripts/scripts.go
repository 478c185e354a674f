// Package scripts holds the Lua scripts the lock runs on each node. Each
// .lua file states its contract in its header comment; watch.lua holds the
// functions that the scripts which register or wake watchers share,
// queue.lua those of the scripts that keep a key's queue of waiters or hand
// a freed key to its first waiter, fence.lua the one that raises a fence
// counter, and kind.lua the one that the acquisitions share to refuse a key
// of another kind; each is prepended to the scripts that use it. ceiling.lua
// comes first in every script that grants or extends a lease: it takes the
// node's lease ceiling off the end of KEYS, when the Client gives it, and
// raises it with every lease (raise_ceiling).
package scripts

import (
	_ "embed"

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
	//go:embed queue.lua
	queueSrc string
	//go:embed fence.lua
	fenceSrc string
	//go:embed ceiling.lua
	ceilingSrc string
	//go:embed acquire.lua
	acquireSrc string
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
	Release = pool.NewScript(ceilingSrc + watchSrc + queueSrc + releaseSrc)
	// Acquire is SET NX PX with the node's lease ceiling raised: a plain
	// lock's acquisition on a standalone node.
	Acquire = pool.NewScript(ceilingSrc + acquireSrc)
	// Extend resets the key's TTL only while it holds the caller's token.
	Extend = pool.NewScript(ceilingSrc + extendSrc)
	// Status returns the key's value and remaining TTL.
	Status = pool.NewScript(statusSrc)
	// AcquireFenced sets the key like SET NX PX and reads its fence counter.
	AcquireFenced = pool.NewScript(ceilingSrc + acquireFencedSrc)
	// FenceRaise raises the fence counter while the key holds the token.
	FenceRaise = pool.NewScript(fenceSrc + fenceRaiseSrc)
	// Enqueue takes a free key for the head of its queue, or queues the
	// caller.
	Enqueue = pool.NewScript(ceilingSrc + watchSrc + queueSrc + kindSrc + enqueueSrc)
	// FenceRead reads the fence counter while the key holds the token.
	FenceRead = pool.NewScript(fenceReadSrc)
	// AcquireDelay sets the key like SET NX PX, and its holder marker,
	// unless the key is in its lock-delay.
	AcquireDelay = pool.NewScript(ceilingSrc + acquireDelaySrc)
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
