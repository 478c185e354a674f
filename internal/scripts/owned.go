package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/pool"
)

var (
	//go:embed owned_take.lua
	ownedTakeSrc string
	//go:embed owned_extend.lua
	ownedExtendSrc string
	//go:embed owned_release.lua
	ownedReleaseSrc string
	//go:embed owned_fence.lua
	ownedFenceSrc string
)

// The scripts of an owner's holds of an exclusive key (WithOwner): the key
// holds the owner's value, and a hash next to it each hold's expiry.
var (
	// OwnedTake takes a free key for an owner, or adds a hold to the
	// owner's.
	OwnedTake = pool.NewScript(ceilingSrc + watchSrc + kindSrc + ownedTakeSrc)
	// OwnedExtend extends one hold of an owner.
	OwnedExtend = pool.NewScript(ceilingSrc + ownedExtendSrc)
	// OwnedRelease gives one hold back; the last one releases the key as
	// Release does (hand-off, wake-up).
	OwnedRelease = pool.NewScript(ceilingSrc + watchSrc + queueSrc + ownedReleaseSrc + releaseSrc)
	// OwnedFence raises the fence counter for an owner's hold and records
	// the owner's fence.
	OwnedFence = pool.NewScript(fenceSrc + ownedFenceSrc)
)

// OwnedTake's reply codes, and OwnedRelease's for a hold given back while
// others remain (its other replies are Release's).
const (
	OwnedRefused  = 0
	OwnedTaken    = 1
	OwnedReturned = 2
)
