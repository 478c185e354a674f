package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// The election workload: a few Clients campaign on one election, lead a
// short while (proclaiming once or twice), then resign, or are killed (the
// Client closed without Resign, as a crashed process leaves its leadership
// to expire); Observe streams on a Client of their own record the terms
// they see. Each leadership is a Hold of its election [Start, End), its
// Fence the term, so the lock's overlap rule judges it; election_check.go
// adds the rules of terms.

// Defaults and timing of the election workload (see Config).
const (
	defaultElectionClients = 3
	// electionStreams is the number of Observe streams, all on one Client
	// that is never killed.
	electionStreams = 2
	// killEvery: about one leadership in killEvery ends with its Client
	// closed instead of Resign; the next leader waits for its key to expire.
	killEvery = 10
	// probeCampaign bounds each of the prober's Campaigns: it must not
	// lead while the holder does, and a Campaign that would only wait in
	// the queue says nothing more after this long.
	probeCampaign = 250 * time.Millisecond
)

// electionTTL is the TTL of the election workers' and the prober's
// leaderships: the run's TTL, or more when the node timeout leaves it too
// little room to auto-extend (the smoke run's 1s: a leadership's validity
// must exceed the loss margin, twice the node timeout, plus one node
// timeout).
func (c Config) electionTTL() time.Duration { return max(c.TTL, 4*c.NodeTimeout) }

// clientKill counts the leaders killed (their Client closed without Resign).
const clientKill = "leader killed (Client closed without Resign)"

// electionNames is the election workload's election.
var electionNames = []string{"chaos:election:0"}

// lead campaigns on election with ttl, bounded by wait, recording when the
// call began.
func (w *worker) lead(ctx context.Context, election string, ttl, wait time.Duration) (*redlock.Leadership, time.Time, error) {
	lctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	begin := time.Now()
	ls, err := w.client.Campaign(lctx, election, fmt.Sprintf("worker-%d", w.id), ttl)
	return ls, begin, err
}

// electionIteration is one leadership of the worker's election: campaign,
// lead for a short random time with one or two Proclaims, then Resign or,
// about one time in killEvery (never after a kill), a kill: the Client is
// closed and replaced.
func (w *worker) electionIteration(ctx context.Context) {
	name := w.keys[0]
	ls, begin, err := w.lead(ctx, name, w.leadTTL, lockWait)
	if err != nil {
		w.stats.fail(err)
		return
	}
	start := time.Now()
	w.leadAWhile(ls)
	// Never two kills in a row: each one leaves the election without a
	// leader for a whole TTL, and the run must see leaders again within
	// recoverWindow and one TTL after a quarantine (Result.Unexercised).
	if w.newClient == nil || w.rng.IntN(killEvery) != 0 || w.lastKilled.Load() {
		w.lastKilled.Store(false)
		w.resign(ls, name, begin, start)
		return
	}
	w.lastKilled.Store(true)
	w.recordLeadership(ls, name, begin, start) // it relied on it until now
	w.faults.add(clientKill)
	_ = w.client.Close()
	w.client = w.newClient()
}

// leadAWhile leads for one or two short spells, each followed by a
// Proclaim while the leadership is valid, then one more; it stops at once
// when the leadership ends (Done).
func (w *worker) leadAWhile(ls *redlock.Leadership) {
	proclaims := 1 + w.rng.IntN(2)
	for i := 0; i <= proclaims; i++ {
		t := time.NewTimer(leadTime(w.rng))
		select {
		case <-t.C:
		case <-ls.Done():
			t.Stop()
			return
		}
		if i < proclaims && time.Now().Before(ls.Until()) {
			_ = ls.Proclaim(context.Background(), fmt.Sprintf("worker-%d/%d", w.id, i+1)) // fails under faults; no harm
		}
	}
}

// leadTime is one spell of a leadership.
func leadTime(rng *rand.Rand) time.Duration {
	return 10*time.Millisecond + durN(rng, 90*time.Millisecond)
}

// recordLeadership records ls as a hold of election, ending now, or at
// Until() if that came first.
func (w *worker) recordLeadership(ls *redlock.Leadership, election string, begin, start time.Time) {
	end := time.Now()
	if u := ls.Until(); u.Before(end) {
		end = u
	}
	w.rec.hold(Hold{Key: election, Client: w.id, Begin: begin, Start: start, End: end, Fence: ls.Term(), Workload: Election})
}

// resign records the leadership, then resigns it.
func (w *worker) resign(ls *redlock.Leadership, election string, begin, start time.Time) {
	w.recordLeadership(ls, election, begin, start)
	_ = ls.Resign(context.Background()) // errors are expected under faults: the key expires
}

// tryLead is the prober's election attempt: a Campaign bounded by
// probeCampaign; one that leads is held a moment, recorded and resigned.
func (w *worker) tryLead(election string) error {
	ls, begin, err := w.lead(context.Background(), election, w.leadTTL, probeCampaign)
	if err != nil {
		return err
	}
	start := time.Now()
	time.Sleep(sharedTime(w.rng))
	w.resign(ls, election, begin, start)
	return nil
}

// observe records what one Observe stream of election receives, until ctx
// ends.
func observe(ctx context.Context, c *redlock.Client, election string, stream int, rec *recorder) {
	for ld := range c.ObserveLeader(ctx, election) {
		rec.observe(Observation{Election: election, Stream: stream, Term: ld.Term, At: time.Now()})
	}
}
