package node

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/pool"
)

// witnessed is the Pool a Set calls a standalone node through. While the
// node's own Pool tells its server's identity (pool.Identifier: FromURL,
// New over a *redis.Client once its dial hook has read every connection),
// calls go to it as they are, and an answer that arrives once it no longer
// tells is refused. Otherwise (pool.New over other clients, rueidispool.New,
// a Pool the caller wrote, an Identifier before its first connection)
// every script runs with an epilogue that reads, in the same round trip
// and atomically with the script, the server's run, its uptime and the
// fresh-start declaration; SetNX runs as such a script. So the restart
// quarantine sees, by the time any answer arrives, the run that gave it,
// whatever the Pool: the guarantee does not depend on the adapter.
//
// What a script cannot read stays unknown: CONFIG (scripts may not call
// it), so a node known only by scripts is judged as one that does not
// persist every write, and its maxmemory-policy is not warned about.
type witnessed struct {
	pool.Pool
	own     pool.Identifier // the Pool's own, nil when it tells none
	pinged  atomic.Bool     // bare sent its one PING
	scripts sync.Map        // *pool.Script -> *pool.Script, its witnessed form

	mu  sync.Mutex
	id  pool.Identity
	set bool
}

// witnessEpilogue follows the body of every witnessed script: it returns
// the node's run, its uptime in seconds (-1 when INFO is refused) and
// whether the fresh-start declaration names this run, then the body's
// reply, which a Lua nil leaves out.
const witnessEpilogue = `
end
local redlock_reply = redlock_body()
local redlock_info = redis.pcall('INFO', 'server')
local redlock_run, redlock_up, redlock_fresh = '', -1, 0
if type(redlock_info) == 'string' then
  redlock_run = string.match(redlock_info, 'run_id:(%w+)') or ''
  redlock_up = tonumber(string.match(redlock_info, 'uptime_in_seconds:(%d+)') or '-1')
end
if redlock_run ~= '' and redis.pcall('GET', '` + keyspace.FreshStart + `') == redlock_run then
  redlock_fresh = 1
end
return {redlock_run, redlock_up, redlock_fresh, redlock_reply}
`

// witnessSetNX is SET NX PX as a script, so that it too carries the
// node's identity.
var witnessSetNX = pool.NewScript(`return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])`)

// newWitnessed returns p, called through scripts that tell its server's
// identity whenever p does not tell it.
func newWitnessed(p pool.Pool) *witnessed {
	own, _ := p.(pool.Identifier)
	return &witnessed{Pool: p, own: own}
}

// errUntold is the error of a call whose answer arrived once the node's
// Pool no longer told the identity of the run that gave it.
var errUntold = errors.New("node: the Pool stopped telling its server's identity during the call")

// told reports whether the node's Pool tells its server's identity now.
func (w *witnessed) told() bool {
	if w.own == nil {
		return false
	}
	_, ok := w.own.Identity()
	return ok
}

// bare reports whether to call the Pool as it is: it tells its server's
// identity now or, the first time it is asked, once a PING has made it
// connect (an Identifier learns the identity with its first connection).
func (w *witnessed) bare(ctx context.Context) bool {
	if w.own == nil {
		return false
	}
	if w.told() {
		return true
	}
	cmd, ok := w.Pool.(pool.Commander)
	if !ok || w.pinged.Swap(true) {
		return false
	}
	_, _ = cmd.Do(ctx, "PING")
	return w.told()
}

// witness returns the witnessed form of s, made once.
func (w *witnessed) witness(s *pool.Script) *pool.Script {
	if v, ok := w.scripts.Load(s); ok {
		return v.(*pool.Script)
	}
	v, _ := w.scripts.LoadOrStore(s, pool.NewScript("local function redlock_body()\n"+s.Source()+witnessEpilogue))
	return v.(*pool.Script)
}

// Eval runs script and returns its reply, having learned the identity of
// the run that answered.
func (w *witnessed) Eval(ctx context.Context, script *pool.Script, keys []string, args ...any) (any, error) {
	if w.bare(ctx) {
		v, err := w.Pool.Eval(ctx, script, keys, args...)
		if err == nil && !w.told() {
			return nil, errUntold
		}
		return v, err
	}
	v, err := w.Pool.Eval(ctx, w.witness(script), keys, args...)
	if err != nil {
		return nil, err
	}
	return w.learn(v, time.Now())
}

// SetNX runs SET NX PX, as a witnessed script unless the Pool tells.
func (w *witnessed) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	if w.bare(ctx) {
		ok, err := w.Pool.SetNX(ctx, key, value, ttl)
		if err == nil && !w.told() {
			return false, errUntold
		}
		return ok, err
	}
	if ttl <= 0 {
		return false, fmt.Errorf("node: SetNX needs a positive ttl, got %v", ttl)
	}
	ms := (ttl + time.Millisecond - 1).Milliseconds()
	v, err := w.Eval(ctx, witnessSetNX, []string{key}, value, ms)
	if err != nil {
		return false, err
	}
	return v == "OK", nil
}

// errWitness is returned for a witnessed reply that is not the epilogue's.
var errWitness = errors.New("node: malformed reply of a witnessed script")

// learn takes the identity off a witnessed reply v, received at now, and
// returns the body's reply.
func (w *witnessed) learn(v any, now time.Time) (any, error) {
	arr, ok := v.([]any)
	if !ok || len(arr) < 3 || len(arr) > 4 {
		return nil, fmt.Errorf("%w: %v", errWitness, v)
	}
	run, ok1 := arr[0].(string)
	up, ok2 := arr[1].(int64)
	fresh, ok3 := arr[2].(int64)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("%w: %v", errWitness, v)
	}
	id := pool.Identity{RunID: run, FreshStart: fresh == 1 && run != "", Learned: now,
		Persistence: pool.PersistenceUnknown,
		Err:         errors.New("persistence unknown: the node's Pool is not a pool.Identifier, and scripts cannot read CONFIG")}
	if up >= 0 {
		// Redis counts uptime in whole seconds, up to one more than true:
		// the second added back makes the run look younger, never older.
		id.Started = now.Add(time.Second - time.Duration(up)*time.Second)
	} else {
		id.Err = errors.Join(id.Err, errors.New("INFO server refused to scripts: uptime unknown"))
	}
	w.keep(id)
	if len(arr) == 3 {
		return nil, nil // the body returned nil
	}
	if err, ok := arr[3].(error); ok {
		return nil, err
	}
	return arr[3], nil
}

// keep records id, unless it is of another run than the one known and the
// known one keeps the node out longer (stricter): answers handled out of
// order, or runs started within the uptime's one-second grain of each
// other, cannot be ordered by their start, so the node is judged by the
// stricter of the two, which is safe whichever run is current. A run, once
// declared fresh, stays so.
func (w *witnessed) keep(id pool.Identity) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case !w.set:
	case id.RunID == w.id.RunID:
		id.FreshStart = id.FreshStart || w.id.FreshStart
		if w.id.Started.After(id.Started) {
			id.Started = w.id.Started // the younger estimate
		}
	case stricter(w.id, id):
		return
	}
	w.id, w.set = id, true
}

// stricter reports whether a server of identity a stays out of the
// majority longer after a restart than one of identity b, by the
// quarantine's own rule (QuarantineLeft) under a hold longer than any.
func stricter(a, b pool.Identity) bool {
	const forever = 100 * 365 * 24 * time.Hour
	now := a.Started
	if b.Started.After(now) {
		now = b.Started
	}
	return QuarantineLeft(a, forever, now) > QuarantineLeft(b, forever, now)
}

// Identity implements pool.Identifier: what the Pool tells, or else what
// the latest witnessed answer, of the newest run that answered, told.
func (w *witnessed) Identity() (pool.Identity, bool) {
	if w.own != nil {
		if id, ok := w.own.Identity(); ok {
			return id, true
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.id, w.set
}
