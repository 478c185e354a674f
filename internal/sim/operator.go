package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// operator is someone who, after a node that does not persist restarted
// empty, runs `redlock nodes declare-fresh` (redlock.DeclareFresh) while
// the Clients work, and retries while it is refused, as its error says
// to: it must declare nothing while any node may hold a valid lease,
// those the restarted node forgot included.
type operator struct {
	r     *runner
	from  time.Duration // the first call
	tries int           // at most
	pause time.Duration // the longest pause between two tries
	rng   *rand.Rand
}

// newOperator draws the run's operator, nil for none: in one run in two
// that restarts a node that does not persist, one of its restarts and a
// time within the quarantine after it. The draws have a source of their
// own, so a run without an operator is the one its seed gave before.
func (r *runner) newOperator() *operator {
	rng := rand.New(rand.NewPCG(r.seed, 4))
	if rng.IntN(2) == 0 {
		return nil
	}
	var restarts []time.Duration
	for _, f := range r.nw.plan.faults {
		if f.kind == nodeCrash && !r.nw.nodes[f.node].persist {
			restarts = append(restarts, f.to)
		}
	}
	if len(restarts) == 0 {
		return nil
	}
	o := &operator{r: r, tries: 1 + rng.IntN(8), pause: 50*time.Millisecond + time.Duration(rng.Int64N(int64(400*time.Millisecond))), rng: rng}
	o.from = restarts[rng.IntN(len(restarts))] + time.Duration(rng.Int64N(int64(quarantine)))
	return o
}

// run makes the operator's calls over links of its own (the network's
// delays and losses, no fault of a Client's), as the history's client
// r.clients, until one declares or the tries are spent.
func (o *operator) run() {
	r := o.r
	c := r.clients
	links := make([]pool.Pool, len(r.nw.nodes))
	for j, nd := range r.nw.nodes {
		links[j] = &link{nw: r.nw, client: c, node: nd, seed: r.seed<<20 + uint64(1000+1000*64+j)}
	}
	r.nw.sleepUntil(o.from)
	for range o.tries {
		r.h.call(c, "nodes", "declare-fresh")
		decl, err := redlock.DeclareFresh(context.Background(), links)
		switch {
		case err == nil:
			r.h.note(c, "nodes", "< declared %d", len(decl))
			return
		case errors.Is(err, redlock.ErrNotFresh):
			r.h.note(c, "nodes", "< refused:%s", refusal(err))
		default:
			r.h.note(c, "nodes", "< failed, %d declared", len(decl))
		}
		time.Sleep(time.Duration(o.rng.Int64N(int64(o.pause))))
	}
}

// refusal names what refused a declaration: live lease ceilings, the
// library's keys, or both.
func refusal(err error) string {
	var why string
	if strings.Contains(err.Error(), keyspace.Ceiling) {
		why += " ceiling"
	}
	if strings.Contains(err.Error(), "of the library's keys") {
		why += " keys"
	}
	return why
}
