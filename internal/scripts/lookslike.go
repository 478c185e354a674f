package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/pool"
)

//go:embed lookslike.lua
var looksLikeSrc string

// LooksLike returns which of its KEYS hold, with a TTL, a value a lock of
// any kind writes under the caller's key name: a token, a multi-lock's
// token, an owner's value, the readers' marker, a permit in any slot
// (lookslike.lua).
var LooksLike = pool.NewScript(looksLikeSrc)
