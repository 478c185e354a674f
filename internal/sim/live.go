package sim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
	"github.com/redlockgo/redlock/redlock"
)

// settle is how long a run's last phase lets the system settle once every
// fault has ended and every worker has made its last call, and within how
// long after that each of the phase's calls must return with its key:
// together the liveness bound the run checks.
//
// What may stand in a waiter's way when the faults end, and when it is
// gone: a restarted node sits out the quarantine from its restart, which
// came before; a key, queue entry or grant left by a call whose release
// was lost expires a TTL (at most maxTTL; a queue entry's lease is its
// TTL, at least 1s) after its last write, and a request still on the
// network writes at most spikeMax late; a queue entry that nobody serves
// any more may be granted the key until its lease ends, for a TTL: two
// TTLs. These run at once, from one instant.
const settle = max(quarantine, 2*maxTTL) + spikeMax

// within bounds each of the phase's calls from the settle time on: the
// other Clients' calls on its key (three at most) come first, each holding
// liveHold with a TTL of at most liveTTL(maxTimeout), which a release
// whose messages were lost leaves on the key; a waiter notices within a
// retry (250ms, the default ExponentialBackoff's ceiling) and a call on
// the nodes (at most maxTimeout): four of each, for lost messages.
const within = 3*(liveHold+4*maxTimeout+100*time.Millisecond) + 4*(250*time.Millisecond+maxTimeout)

// withinElection is within for the phase's Campaign calls, with what a
// Campaign's acquisition needs beyond a Lock's. After its grants it makes
// up to four majority calls (an extension confirming them, the fence's
// read and raise, the leader record), each up to a node timeout, for each
// of the three holders before it. And a message lost among those calls
// fails the whole acquisition, not one call: the grants go back only once
// the lost call's linger ends (fanout.Linger node timeouts; the give-back
// is ordered after it on that node), a round has them granted again, and
// the four calls run again. Four lost messages, as for a Lock, each at
// that price. (Seed 1612, three Clients campaigning under 4.7% loss, took
// 9.3s; no other of seeds 1-2000 took over 5s.)
const withinElection = 3*(liveHold+4*maxTimeout+100*time.Millisecond+4*maxTimeout) +
	4*(250*time.Millisecond+fanout.Linger*maxTimeout+4*maxTimeout)

// liveTTL is the TTL of the last phase's calls of a Client with node
// timeout timeout: the least a lock kept alive accepts (worker.ttlFor).
func liveTTL(timeout time.Duration) time.Duration { return 4*timeout + 100*time.Millisecond }

// liveAll makes every Client take every key the run's workloads use in
// the last phase, rather than one key a run: as many calls again as the
// workers made, too many for make sim's budget.
const liveAll = false

// liveElections adds Campaign on the run's elections to the last phase.
const liveElections = true

// liveHold is how long each of the last phase's calls holds its key.
const liveHold = 10 * time.Millisecond

// healed is when the plan's last fault ends (0 for a run without one).
func (p plan) healed() time.Duration {
	var t time.Duration
	for _, f := range p.faults {
		t = max(t, f.to)
	}
	return t
}

// live is a worker's last phase: it waits for every worker to have made its
// last call (the runner's working group) and every fault to have ended,
// then settle, then takes the key drawn for the run (every key the run's
// workloads use, with liveAll) with its kind's blocking call (Lock,
// AcquirePermit; Campaign with liveElections), holds it liveHold and gives
// it back. A call that has not returned with its key within settle and its
// kind's bound (within, withinElection) of the faults' end is a violation.
func (w *worker) live() {
	w.r.working.Done()
	w.r.working.Wait()
	if w.client == nil {
		return
	}
	healed := max(w.r.nw.now(), w.r.nw.plan.healed())
	// Not all at one instant: tokens are drawn from one seeded source, in
	// the order the Clients' goroutines draw them.
	// On a node whose clock runs slow, whatever expires takes longer.
	w.r.nw.sleepUntil(healed + w.r.nw.plan.slowed(settle) + time.Duration(w.rng.Int64N(int64(100*time.Millisecond))))
	calls := w.liveCalls()
	if !liveAll && len(calls) > 0 {
		// One key a run, the same for every Client (a source of the
		// run's own), so that they contend for it.
		k := rand.New(rand.NewPCG(w.r.seed, 2)).IntN(len(calls))
		calls = calls[k : k+1]
	}
	w.rng.Shuffle(len(calls), func(i, j int) { calls[i], calls[j] = calls[j], calls[i] })
	for _, call := range calls {
		ctx, cancel := context.WithDeadline(context.Background(), w.r.nw.start.Add(healed+w.r.nw.plan.slowed(settle+call.within)))
		call.run(ctx, healed)
		cancel()
	}
}

// liveCall is one of the last phase's calls, and its bound from the
// settle time on, which ends run's context.
type liveCall struct {
	within time.Duration
	run    func(ctx context.Context, healed time.Duration)
}

// uses reports whether the run's mix makes calls of the named workloads.
func (r *runner) uses(names ...string) bool {
	for i, wl := range workloads {
		for _, n := range names {
			if wl.name == n && r.weights[i] > 0 {
				return true
			}
		}
	}
	return false
}

// liveCalls is the last phase's calls: one per key the run's workloads use.
func (w *worker) liveCalls() []liveCall {
	var calls []liveCall
	ttl := liveTTL(w.timeout)
	if w.r.uses("lock", "read", "multi", "resume", "owner") {
		for _, key := range w.r.locks {
			calls = append(calls, liveCall{within, func(ctx context.Context, healed time.Duration) {
				w.liveLock(ctx, healed, hold{kind: exclusive, keys: []string{key}}, fmt.Sprintf("Lock ttl=%v", ttl), func(ctx context.Context) (*redlock.Lock, error) {
					return w.client.Lock(ctx, key, ttl)
				})
			}})
		}
	}
	if w.r.uses("permit") {
		for _, key := range w.r.permits {
			limit := w.r.limits[key]
			calls = append(calls, liveCall{within, func(ctx context.Context, healed time.Duration) {
				w.liveLock(ctx, healed, hold{kind: permit, keys: []string{key}}, fmt.Sprintf("AcquirePermit limit=%d ttl=%v", limit, ttl), func(ctx context.Context) (*redlock.Lock, error) {
					return w.client.AcquirePermit(ctx, key, limit, ttl)
				})
			}})
		}
	}
	if liveElections && w.r.uses("elect") {
		for _, e := range w.r.elections {
			calls = append(calls, liveCall{withinElection, func(ctx context.Context, healed time.Duration) {
				w.liveCampaign(ctx, healed, e, ttl)
			}})
		}
	}
	return calls
}

// liveLock makes one of the last phase's lock calls, desc, with take.
func (w *worker) liveLock(ctx context.Context, healed time.Duration, hd hold, desc string, take func(ctx context.Context) (*redlock.Lock, error)) {
	key := on(hd)
	hd.client, hd.called = w.c, w.r.nw.now()
	w.r.h.call(w.c, key, "%s (healed)", desc)
	l, err := take(ctx)
	if !w.servedBy(ctx, key, desc, healed, err) {
		return
	}
	w.holdLive(hd, key, l.Until())
	w.unlock(key, l)
}

// holdLive records a last-phase call's hold of key from now for liveHold,
// cut at its until.
func (w *worker) holdLive(hd hold, key string, until time.Time) {
	hd.from = w.r.nw.now()
	w.r.h.note(w.c, key, "< ok until=%s", w.at(until))
	time.Sleep(liveHold)
	hd.to = min(w.r.nw.now(), w.r.h.since(until))
	w.r.h.held(hd)
}

// liveCampaign campaigns in election e in the last phase, leads liveHold
// and resigns.
func (w *worker) liveCampaign(ctx context.Context, healed time.Duration, e string, ttl time.Duration) {
	hd := hold{client: w.c, kind: leader, keys: []string{e}, called: w.r.nw.now()}
	desc := fmt.Sprintf("Campaign ttl=%v", ttl)
	w.r.h.call(w.c, e, "%s (healed)", desc)
	ls, err := w.client.Campaign(ctx, e, fmt.Sprintf("c%d", w.c), ttl)
	if !w.servedBy(ctx, e, desc, healed, err) {
		return
	}
	w.holdLive(hd, e, ls.Until())
	w.r.h.call(w.c, e, "Resign")
	w.returned(e, ls.Resign(context.Background()))
}

// servedBy records a last-phase call's result, flags it when it did not
// return with the key before ctx's deadline, and reports whether it did.
func (w *worker) servedBy(ctx context.Context, key, desc string, healed time.Duration, err error) bool {
	if err == nil {
		return true
	}
	w.returned(key, err)
	deadline, _ := ctx.Deadline()
	w.r.h.flag(key, "c%d's %s on %s not served within %v after the faults healed at %.6fs: %s",
		w.c, desc, key, deadline.Sub(w.r.nw.start)-healed, healed.Seconds(), class(err))
	return false
}
