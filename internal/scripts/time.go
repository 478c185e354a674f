package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/pool"
)

//go:embed time.lua
var timeSrc string

// Time returns the node's clock as { seconds, microseconds }.
var Time = pool.NewScript(timeSrc)
