package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"net"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/pool"
)

// network carries every message between the Clients and the nodes: each
// one leaves at the time its sender makes the call, is delayed by a time
// drawn from its link's seeded source, may be lost, runs on the node when
// it arrives (later if the node is paused, refused if it is down) and
// brings its reply back the same way. Which faults hold at a time is the
// plan's to say; the network only asks it.
type network struct {
	start time.Time // the run's start on the virtual clock
	plan  plan
	nodes []*simNode
	loss  float64 // probability that one message (a request or a reply) is lost
	spike float64 // probability that one message is delayed by up to spikeMax
	wg    sync.WaitGroup

	// trace, when set, is told of every message's fate: what ran on which
	// node, with its reply and the keys' values after it, and what was
	// lost. It is not part of the history (nor of its digest).
	trace func(at time.Duration, line string)
	keys  []string // the keys whose values the trace shows

	// names caches scriptName's answers for the run: a script's source is
	// long, and every message names its script. Per run, since the
	// witnessed scripts of a Pool without identity are made per Client.
	names sync.Map // *pool.Script -> string
}

// spikeMax is the longest delay a message may take beyond the usual ones:
// longer than any Client's node timeout, so that late replies happen.
const spikeMax = 400 * time.Millisecond

// simNode is one node: the kit's in-process Redis server, reached through
// its Pool, and what the network knows of it.
type simNode struct {
	index   int
	addr    string
	server  pool.Pool // the kit's Pool: runs a command on the server at once
	persist bool      // a restart keeps the data (appendfsync always)
	// untold: the node's Pool tells no identity (pool.New over a client
	// whose identity read was refused, a user's own Pool), so the library
	// learns the run from its scripts (witnessed scripts read INFO server)
	untold bool

	mu          sync.Mutex
	fresh       map[int]bool                  // runs that carry the fresh-start declaration
	infoScripts map[*pool.Script]*pool.Script // scripts whose INFO server reads infoKey (answerInfo)
}

// now is the virtual time since the run's start.
func (nw *network) now() time.Duration { return time.Since(nw.start) }

// sleepUntil sleeps until t since the run's start.
func (nw *network) sleepUntil(t time.Duration) {
	if d := t - nw.now(); d > 0 {
		time.Sleep(d)
	}
}

// link is the network between one Client and one node, as the Client's
// pool.Pool for that node (with pool.Identifier and pool.Commander).
type link struct {
	nw     *network
	client int    // the Client whose faults the link shares (its worker's)
	seed   uint64 // the run's seed and the link's own, for its draws
	node   *simNode

	mu  sync.Mutex
	id  pool.Identity
	set bool
}

// reply is what a message brings back.
type reply struct {
	v   any
	err error
}

// draw is one message's fate, drawn when it is sent.
type draw struct {
	out, back         time.Duration
	lostOut, lostBack bool
}

// draw draws the fate of message what sent at sent from a source seeded
// with the link's seed, the time and the message: a function of the
// message, not of the order in which the Client's goroutines sent the
// messages of one instant (several may leave at once on one link, as a
// fan-out's cleanup and a keeper's extension do).
func (l *link) draw(sent time.Duration, what string) draw {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d %s", sent, what)
	rng := rand.New(rand.NewPCG(l.seed, h.Sum64()))
	one := func() time.Duration {
		d := 100*time.Microsecond + time.Duration(rng.ExpFloat64()*float64(time.Millisecond))
		if rng.Float64() < l.nw.spike {
			d += time.Duration(rng.Int64N(int64(spikeMax)))
		}
		return d
	}
	return draw{out: one(), back: one(), lostOut: rng.Float64() < l.nw.loss, lostBack: rng.Float64() < l.nw.loss}
}

// send carries op to the node and its reply back, and returns the reply,
// or ctx's error when the reply does not arrive by ctx's end (the message
// goes on meanwhile: a command that left runs on the node whether or not
// its sender still waits).
func (l *link) send(ctx context.Context, what string, op func(ctx context.Context, p pool.Pool) (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sent := l.nw.now()
	d := l.draw(sent, what)
	out := make(chan reply, 1)
	l.nw.wg.Go(func() { l.carry(sent, d, what, op, out) })
	select {
	case r := <-out:
		return r.v, r.err
	case <-ctx.Done():
		l.tracef(l.nw.now(), "c%d gave up on n%d: %s (sent %.6fs)", l.client, l.node.index, what, sent.Seconds())
		return nil, ctx.Err()
	}
}

// tracef tells the trace, if any, of one step of a message.
func (l *link) tracef(at time.Duration, format string, args ...any) {
	if l.nw.trace != nil {
		l.nw.trace(at, fmt.Sprintf(format, args...))
	}
}

// values is the keys' values and TTLs on node j, for the trace.
func (nd *simNode) values(keys []string) string {
	cmd := nd.server.(pool.Commander)
	var b strings.Builder
	for _, k := range keys {
		v, _ := cmd.Do(context.Background(), "GET", k)
		ttl, _ := cmd.Do(context.Background(), "PTTL", k)
		fmt.Fprintf(&b, " %s=%v/%vms", k, v, ttl)
		if f, _ := cmd.Do(context.Background(), "GET", k+":fence"); f != nil {
			fmt.Fprintf(&b, " fence=%v", f)
		}
	}
	return b.String()
}

// carry is one message's trip: there, on the node, and back.
func (l *link) carry(sent time.Duration, d draw, what string, op func(ctx context.Context, p pool.Pool) (any, error), out chan<- reply) {
	nw, c, j := l.nw, l.client, l.node.index
	left := nw.plan.held(clientPause, c, sent)
	if d.lostOut || nw.plan.cut(c, j, left) {
		l.tracef(sent, "c%d->n%d lost: %s", c, j, what)
		return
	}
	at := nw.plan.held(nodePause, j, left+d.out)
	nw.sleepUntil(at)
	var r reply
	var id pool.Identity
	if nw.plan.down(j, at) {
		r.err = &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	} else {
		r.v, r.err = op(context.Background(), l.node.server)
		id = l.node.identity(nw, at)
	}
	if nw.trace != nil {
		l.tracef(at, "n%d runs c%d's %s (sent %.6fs) -> %v %v;%s", j, c, what, sent.Seconds(), r.v, r.err, l.node.values(nw.keys))
	}
	back := at + d.back
	if d.lostBack || nw.plan.cut(c, j, back) {
		l.tracef(back, "n%d->c%d reply lost: %s", j, c, what)
		return
	}
	nw.sleepUntil(nw.plan.held(clientPause, c, back))
	if id.RunID != "" {
		l.mu.Lock()
		l.id, l.set = id, true
		l.mu.Unlock()
	}
	out <- r
}

// identity is what a connection to node j learns at t: its run, when it
// started (t less its uptime by its own clock, as a Pool reads INFO), its
// persistence, and whether the run was declared fresh.
func (nd *simNode) identity(nw *network, t time.Duration) pool.Identity {
	run, _ := nw.plan.run(nd.index, t)
	id := pool.Identity{
		RunID:           runID(nd.index, run),
		Started:         nw.start.Add(t - nd.uptime(nw, t)),
		Persistence:     pool.PersistencePartial,
		MaxMemoryPolicy: "noeviction",
		Learned:         nw.start.Add(t),
	}
	if nd.persist {
		id.Persistence = pool.PersistenceAlways
	}
	nd.mu.Lock()
	id.FreshStart = nd.fresh[run]
	nd.mu.Unlock()
	return id
}

// info is INFO server's reply on node j at t, with what the library
// reads of it: the run and its uptime in whole seconds.
func (nd *simNode) info(nw *network, t time.Duration) string {
	run, _ := nw.plan.run(nd.index, t)
	return fmt.Sprintf("# Server\r\nrun_id:%s\r\nuptime_in_seconds:%d\r\n", runID(nd.index, run), nd.uptime(nw, t)/time.Second)
}

// uptime is how long node j's run at t has been up by its own clock; the
// first run was up an hour before the run's start.
func (nd *simNode) uptime(nw *network, t time.Duration) time.Duration {
	run, started := nw.plan.run(nd.index, t)
	clock := nw.plan.clocks[nd.index]
	up := clock.read(t) - clock.read(started)
	if run == 0 {
		up += time.Hour
	}
	return up
}

// infoCall is how the library's witnessed scripts read INFO server, which
// the kit's miniredis does not serve; infoKey is where the node keeps the
// reply for them, set just before each such script runs (answerInfo).
const (
	infoCall = "redis.pcall('INFO', 'server')"
	infoKey  = "sim:info"
)

// answerInfo returns s with its INFO server call reading infoKey instead,
// s itself when it makes no such call. The reply cannot be in the script's
// text: a script a second would each be compiled anew.
func (nd *simNode) answerInfo(s *pool.Script) *pool.Script {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if out, ok := nd.infoScripts[s]; ok {
		return out
	}
	if nd.infoScripts == nil {
		nd.infoScripts = map[*pool.Script]*pool.Script{}
	}
	out := s
	if strings.Contains(s.Source(), infoCall) {
		out = pool.NewScript(strings.ReplaceAll(s.Source(), infoCall, "redis.pcall('GET', '"+infoKey+"')"))
	}
	nd.infoScripts[s] = out
	return out
}

// runID names run r of node j as Redis names a run: 40 characters.
func runID(j, r int) string { return fmt.Sprintf("sim%03d%034d", j, r) }

// noteFresh records whether run r now carries the fresh-start declaration,
// after a command that may have set it.
func (nd *simNode) noteFresh(nw *network, t time.Duration) {
	run, _ := nw.plan.run(nd.index, t)
	v, err := nd.server.(pool.Commander).Do(context.Background(), "GET", keyspace.FreshStart)
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.fresh[run] = err == nil && v == runID(nd.index, run)
}

// Addr implements pool.Pool.
func (l *link) Addr() string { return l.node.addr }

// SetNX implements pool.Pool.
func (l *link) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	v, err := l.send(ctx, fmt.Sprintf("SETNX %s %s %v", key, value, ttl), func(ctx context.Context, p pool.Pool) (any, error) {
		return p.SetNX(ctx, key, value, ttl)
	})
	ok, _ := v.(bool)
	return ok, err
}

// Eval implements pool.Pool.
func (l *link) Eval(ctx context.Context, script *pool.Script, keys []string, args ...any) (any, error) {
	return l.send(ctx, fmt.Sprintf("%s %v %v", l.nw.scriptName(script), keys, args), func(ctx context.Context, p pool.Pool) (any, error) {
		answered := l.node.answerInfo(script)
		if answered != script {
			// INFO server as the node answers it now; the goroutines that
			// meet here at once set the same reply.
			_, _ = p.(pool.Commander).Do(ctx, "SET", infoKey, l.node.info(l.nw, l.nw.now()), "PX", "3600000")
		}
		v, err := p.Eval(ctx, answered, keys, args...)
		for _, k := range keys {
			if k == keyspace.FreshStart {
				l.node.noteFresh(l.nw, l.nw.now())
				break
			}
		}
		return v, err
	})
}

// Do implements pool.Commander.
func (l *link) Do(ctx context.Context, args ...string) (any, error) {
	return l.send(ctx, strings.Join(args, " "), func(ctx context.Context, p pool.Pool) (any, error) {
		if len(args) == 2 && strings.EqualFold(args[0], "INFO") && strings.EqualFold(args[1], "server") {
			return l.node.info(l.nw, l.nw.now()), nil // the kit's miniredis does not serve it
		}
		v, err := p.(pool.Commander).Do(ctx, args...)
		l.node.noteFresh(l.nw, l.nw.now())
		return v, err
	})
}

// Close implements pool.Pool: the node outlives its links.
func (l *link) Close() error { return nil }

// Identity implements pool.Identifier: the identity learned with the
// latest reply.
func (l *link) Identity() (pool.Identity, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id, l.set
}

// untold is a link as a Pool that tells no identity (not a
// pool.Identifier): the library calls the node through witnessed scripts.
type untold struct {
	pool.Pool
	pool.Commander
}

// scriptHeader is a script's header line, "-- name: what it does".
var scriptHeader = regexp.MustCompile(`(?m)^-- ([a-z_]+): `)

// scriptName names a script for the trace: the last header of its parts
// (the shared functions come first, the script's own file last).
func (nw *network) scriptName(s *pool.Script) string {
	if name, ok := nw.names.Load(s); ok {
		return name.(string)
	}
	name := "script"
	if all := scriptHeader.FindAllStringSubmatch(s.Source(), -1); len(all) > 0 {
		name = all[len(all)-1][1]
	}
	nw.names.Store(s, name)
	return name
}
