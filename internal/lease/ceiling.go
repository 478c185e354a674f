package lease

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
)

// A plain lock's acquisition must leave the node's lease ceiling covering
// the lease (scripts' ceiling.lua). acquire.lua does both in one script;
// a bare SET NX PX is cheaper (no script: fewer allocations here, less work
// on the node), and is enough when the Client knows that the ceiling
// covers the lease already: it raised it itself, on the node's current
// run, to at least the TTL, for at least as long as the lease may live.
// The ceiling only grows while the run lives, and a restart breaks every
// connection (the Pool learns the new run before it sends anything on a
// new one), so that knowledge holds while the node's run does. A SET whose
// answer came under another run (the node restarted during the call, and
// the Pool connected to its new run) is followed by acquire.lua on that
// run, which finds the key holding the token and raises the ceiling before
// the vote counts: within the call's node timeout, before any peer of a
// restarted node reads ceilings for it (internal/node, horizon.go).

// ceilingKeep is how many TTLs a raise by acquire.lua keeps the ceiling
// alive: the SETs of the next TTL or so find it covering them.
const ceilingKeep = 3

// ceilings is what a Client knows of its nodes' lease ceilings, from its
// own raises: node i's ceiling is at least ttl until until (the local
// clock), on its run run.
type ceilings []atomic.Pointer[ceilingSeen]

type ceilingSeen struct {
	run   string
	ttl   time.Duration
	until time.Time
}

// runOf returns the run of node i's server as its Pool learned it last, or
// "" when the Pool does not tell (then every acquisition raises).
func (e *Env) runOf(i int) string {
	idr, ok := e.Nodes.Pool(i).(pool.Identifier)
	if !ok {
		return ""
	}
	id, known := idr.Identity()
	if !known {
		return ""
	}
	return id.RunID
}

// covered returns the run on which node i's ceiling is known to cover a
// lease of ttl set by a call bounded by ctx, or "" when it is not known to.
func (e *Env) covered(ctx context.Context, i int, ttl time.Duration) string {
	deadline, ok := ctx.Deadline()
	if !ok || len(e.seen) <= i {
		return ""
	}
	s := e.seen[i].Load()
	if s == nil || s.ttl < ttl || deadline.Add(ttl).After(s.until) {
		return ""
	}
	if run := e.runOf(i); run != "" && run == s.run {
		return run
	}
	return ""
}

// setNX is a plain lock's SET NX PX on node i, on a node that keeps a
// ceiling: bare when the ceiling is known to cover the lease, else
// acquire.lua, whose answer then teaches the Client the ceiling.
func (e *Env) setNX(ctx context.Context, i int, key, token string, ttl time.Duration) (bool, error) {
	if run := e.covered(ctx, i, ttl); run != "" {
		ok, err := e.Nodes.Pool(i).SetNX(ctx, key, token, ttl)
		if !ok || err != nil || e.runOf(i) == run {
			return ok, err
		}
		// Set on a later run, whose ceiling may not cover it: raise it there.
	}
	sent, before := time.Now(), e.runOf(i)
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.Acquire, []string{key},
		token, ttl.Milliseconds(), ceilingKeep*ttl.Milliseconds(), e.MaxTTL.Milliseconds(), keyspace.Ceiling)
	if err != nil {
		return false, err
	}
	arr, err := array(v)
	if err != nil || len(arr) < 3 {
		return false, ErrMalformed
	}
	if pt := Int(arr[2]); pt > 0 && len(e.seen) > i {
		// Known of the run it ran on only when no other run came between.
		if run := e.runOf(i); run != "" && run == before {
			e.seen[i].Store(&ceilingSeen{run: run, ttl: time.Duration(Int(arr[1])) * time.Millisecond,
				until: sent.Add(time.Duration(pt) * time.Millisecond)})
		}
	}
	return Int(arr[0]) == 1, nil
}
