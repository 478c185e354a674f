package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/pool"
)

//go:embed lookslike.lua
var looksLikeSrc string

// LooksLike returns which of its KEYS hold a lock token under a name of
// their own: a lock's string, a permit hash's first slot (lookslike.lua).
var LooksLike = pool.NewScript(looksLikeSrc)
