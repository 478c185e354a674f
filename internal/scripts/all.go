package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/pool"
)

// The scripts of a multi-lock: one call per node covers every key, so each
// node holds all of a lock's keys or none of them.
var (
	//go:embed acquire_all.lua
	acquireAllSrc string
	//go:embed extend_all.lua
	extendAllSrc string
	//go:embed release_all.lua
	releaseAllSrc string
	//go:embed fence_raise_all.lua
	fenceRaiseAllSrc string
)

var (
	// AcquireAll sets every key to the token if none exists, else nothing,
	// and reads the fence counters given; a waiting LockAll keeps its place
	// in every key's queue.
	AcquireAll = pool.NewScript(ceilingSrc + watchSrc + queueSrc + kindSrc + acquireAllSrc)
	// ExtendAll resets every key's TTL only while every key holds the token.
	ExtendAll = pool.NewScript(ceilingSrc + extendAllSrc)
	// ReleaseAll deletes each key that holds the token and hands it to the
	// next waiter of its queue.
	ReleaseAll = pool.NewScript(ceilingSrc + watchSrc + queueSrc + releaseAllSrc)
	// FenceRaiseAll raises every fence counter while every key holds the
	// token.
	FenceRaiseAll = pool.NewScript(fenceSrc + fenceRaiseAllSrc)
)

// AcquireAll's reply codes.
const (
	AcquireAllHeld = 0
	AcquireAllSet  = 1
)
