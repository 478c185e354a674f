// Package scripts holds the Lua scripts the lock runs on each node. Each
// .lua file states its contract in its header comment.
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
	//go:embed acquire_fair.lua
	acquireFairSrc string
	//go:embed leave_queue.lua
	leaveQueueSrc string
	//go:embed release_fair.lua
	releaseFairSrc string
	//go:embed handover.lua
	handoverSrc string
)

var (
	// Release deletes the key only while it holds the caller's token.
	Release = pool.NewScript(releaseSrc)
	// Extend resets the key's TTL only while it holds the caller's token.
	Extend = pool.NewScript(extendSrc)
	// Status returns the key's value and remaining TTL.
	Status = pool.NewScript(statusSrc)
	// AcquireFenced sets the key like SET NX PX and reads its fence counter.
	AcquireFenced = pool.NewScript(acquireFencedSrc)
	// FenceRaise raises the fence counter while the key holds the token.
	FenceRaise = pool.NewScript(fenceRaiseSrc)
	// AcquireFair sets the key only for the head of the key's queue.
	AcquireFair = pool.NewScript(acquireFairSrc)
	// ReleaseFair is Release for a lock taken in a fair queue: its message
	// names the waiter at the head of the queue.
	ReleaseFair = pool.NewScript(releaseFairSrc)
	// Handover is Release that also sets the key for the releasing
	// Client's next waiter when no other Client waits on the node.
	Handover = pool.NewScript(handoverSrc)
	// LeaveQueue removes a waiter from the key's queue.
	LeaveQueue = pool.NewScript(leaveQueueSrc)
)

// Handover's replies.
const (
	HandoverNotHeld  = 0
	HandoverReleased = 1
	HandoverHanded   = 2
)

// Extend's replies.
const (
	ExtendAbsent   = -1
	ExtendTaken    = 0
	ExtendExtended = 1
)
