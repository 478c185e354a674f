package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/pool"
)

// The return of a standalone node that restarted without its data: its
// peers' lease ceilings, and the declaration written once its horizon
// passed (internal/node, horizon.go).
var (
	//go:embed horizon.lua
	horizonSrc string
	//go:embed admit.lua
	admitSrc string

	// Horizon reads a node's run_id, lease ceiling and fresh-start
	// declaration in one step.
	Horizon = pool.NewScript(horizonSrc)
	// Admit declares a node's run fresh, only while it is that run.
	Admit = pool.NewScript(admitSrc)
)
