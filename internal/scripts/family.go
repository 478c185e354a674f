package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/pool"
)

var (
	//go:embed rlock_acquire.lua
	rlockAcquireSrc string
	//go:embed rlock_extend.lua
	rlockExtendSrc string
	//go:embed rlock_release.lua
	rlockReleaseSrc string
	//go:embed rlock_fence.lua
	rlockFenceSrc string
	//go:embed permit_acquire.lua
	permitAcquireSrc string
	//go:embed permit_extend.lua
	permitExtendSrc string
	//go:embed permit_release.lua
	permitReleaseSrc string
	//go:embed permit_fence.lua
	permitFenceSrc string
)

// The scripts of read locks (rlock_*.lua) and permits (permit_*.lua). Their
// extend scripts answer with Extend's codes.
var (
	// RLockAcquire adds a reader to a key that no writer holds or waits for.
	RLockAcquire = pool.NewScript(ceilingSrc + watchSrc + kindSrc + rlockAcquireSrc)
	// RLockExtend extends one reader's own lease.
	RLockExtend = pool.NewScript(ceilingSrc + rlockExtendSrc)
	// RLockRelease removes one reader; the last one frees the key.
	RLockRelease = pool.NewScript(ceilingSrc + watchSrc + queueSrc + rlockReleaseSrc)
	// RLockFence raises the fence counter while the reader's lease is live.
	RLockFence = pool.NewScript(fenceSrc + rlockFenceSrc)
	// PermitAcquire takes a free slot of a semaphore.
	PermitAcquire = pool.NewScript(ceilingSrc + watchSrc + kindSrc + permitAcquireSrc)
	// PermitExtend extends one holder's own permit.
	PermitExtend = pool.NewScript(ceilingSrc + permitExtendSrc)
	// PermitRelease frees every slot that holds the caller's token.
	PermitRelease = pool.NewScript(watchSrc + permitReleaseSrc)
	// PermitFence raises the fence counter while the permit is live.
	PermitFence = pool.NewScript(fenceSrc + permitFenceSrc)
)
