package scripts

import (
	_ "embed"

	"github.com/redlockgo/redlock/pool"
)

// The election's leader record (redlock/election.go): a hash beside the
// election's lock key, written and removed only while that key holds the
// leader's token. Each script's header states its contract.
var (
	//go:embed leader_set.lua
	leaderSetSrc string
	//go:embed leader_get.lua
	leaderGetSrc string
	//go:embed leader_del.lua
	leaderDelSrc string

	// LeaderSet writes the record {token, value, term, rev} while the key
	// holds the token.
	LeaderSet = pool.NewScript(leaderSetSrc)
	// LeaderGet reads the key and the record in one step.
	LeaderGet = pool.NewScript(leaderGetSrc)
	// LeaderDel removes the record while it is the token's.
	LeaderDel = pool.NewScript(leaderDelSrc)
)
