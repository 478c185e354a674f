package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/pool"
)

//go:embed bound.lua
var boundSrc string

// Bound reads the longest TTL a node's clients recorded on it (ceiling.lua
// records it), in ms.
var Bound = pool.NewScript(boundSrc)
