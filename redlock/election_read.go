package redlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
)

// Leader is who leads an election, as a majority of the nodes say. The
// zero Leader (Term 0) is nobody; Observe sends it when a leadership
// lapses with nobody to take it.
type Leader struct {
	// Value is the leader's value: its campaign's, or the last one it
	// proclaimed on a majority.
	Value string
	// Term is the leader's term (Leadership.Term): strictly greater than
	// every earlier leader's.
	Term uint64
	// Rev counts the leader's proclamations recorded on a majority when it
	// was read: 0 for the campaign's value, higher for each later Proclaim
	// of the same term.
	Rev uint64
	// TTL is how long a majority of the nodes will still hold the
	// leadership by their own clocks unless it is extended (the leader
	// extends it every third of its ttl).
	TTL time.Duration
}

// Leader reads who leads election from every node, in parallel and
// without changing anything, each call bounded by the node timeout. It
// returns the leader whose token holds the election's key on a majority,
// with the newest value a majority of those nodes have (a Proclaim that
// reached only a minority is not reported; with fewer answers, the oldest
// value they have of that leader). Otherwise the error wraps
// ErrNoLeader when nobody leads (or a new leader has not yet recorded its
// value), or ErrNoMajority (and ctx.Err() when ctx ended the call) when the
// nodes that answered cannot tell.
func (c *Client) Leader(ctx context.Context, election string) (Leader, error) {
	done, err := c.begin()
	if err != nil {
		return Leader{}, err
	}
	defer done()
	if ctx == nil {
		return Leader{}, errors.New("redlock: nil context")
	}
	key, err := checkElection(election, "", false)
	if err != nil {
		return Leader{}, err
	}
	views := make([]leaderView, c.nodes.Len())
	votes := c.each(ctx, c.nodes.All(), c.nodeTimeout(0), func(ctx context.Context, i int) (bool, error) {
		reply, err := c.env.ReadLeader(ctx, i, key)
		if err == nil {
			err = views[i].parse(reply) // each goroutine writes its own node
		}
		return err == nil, err
	})
	res := fanout.Result{Votes: votes}
	for _, v := range votes {
		if v.OK {
			res.Yes++
		}
	}
	if res.Yes < c.nodes.Quorum() {
		return Leader{}, withContext(c.quorumError("leader", ErrNoMajority, res), ctx.Err())
	}
	return tallyLeader(election, views, votes, c.nodes.Quorum())
}

// leaderView is one node's view of an election: the token on its key and
// the leader record.
type leaderView struct {
	token     string        // "" when the key holds no lock
	ttl       time.Duration // the key's remaining TTL
	recorded  bool          // the record names token
	value     string
	term, rev uint64
}

// parse reads leader_get.lua's reply.
func (v *leaderView) parse(reply any) error {
	a, ok := reply.([]any)
	if !ok || len(a) != 6 {
		return fmt.Errorf("redlock: unexpected leader reply %v", reply)
	}
	v.token, _ = a[0].(string)
	pttl, _ := a[1].(int64)
	v.ttl = time.Duration(pttl) * time.Millisecond
	rtoken, ok := a[2].(string)
	if !ok {
		return nil // no record
	}
	value, _ := a[3].(string)
	term, err1 := strconv.ParseUint(str(a[4]), 10, 64)
	rev, err2 := strconv.ParseUint(str(a[5]), 10, 64)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("redlock: malformed leader record %v", a[2:])
	}
	if rtoken == v.token && v.token != "" {
		v.recorded, v.value, v.term, v.rev = true, value, term, rev
	}
	return nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// errNotRecorded is the error of Leader when a token holds the election
// key on a majority but its record is on none of them yet (a campaigner that was
// just handed the key writes its value next): nobody leads yet, and
// Observe waits for the record rather than report a lapse.
var errNotRecorded = fmt.Errorf("%w: its new leader has not recorded its value yet", ErrNoLeader)

// tallyLeader finds the token that holds the election key on a majority
// of the nodes, and returns its leader: the value of the quorum-th highest
// revision among the nodes that also hold its record (so one that a
// majority has), or, with fewer of them, the lowest revision they have (a
// value the leader did record, if maybe not its last); and the quorum-th
// longest TTL of the key. A record is authentic wherever it is: it is
// written only while the key holds its token. When no token holds a
// majority of the nodes that answered, but could with the nodes that did
// not, nobody can tell: the error wraps ErrNoMajority, not ErrNoLeader.
func tallyLeader(election string, views []leaderView, votes []fanout.Vote, quorum int) (Leader, error) {
	count := map[string]int{}
	best, held, answered := "", 0, 0
	for _, v := range votes {
		if !v.OK {
			continue
		}
		answered++
		if t := views[v.Node].token; t != "" {
			if count[t]++; count[t] > held {
				best, held = t, count[t]
			}
		}
	}
	if held < quorum {
		if silent := len(views) - answered; held+silent >= quorum {
			return Leader{}, fmt.Errorf("%w: election %q: %d of %d nodes answered, and the %d silent ones could make a leader of a token held on %d",
				ErrNoMajority, election, answered, len(views), silent, held)
		}
		return Leader{}, fmt.Errorf("%w of election %q: no token holds its key on a majority", ErrNoLeader, election)
	}
	var holders, ours []leaderView
	for _, v := range votes {
		if n := views[v.Node]; v.OK && n.token == best {
			holders = append(holders, n)
			if n.recorded {
				ours = append(ours, n)
			}
		}
	}
	if len(ours) == 0 {
		return Leader{}, fmt.Errorf("election %q: %w", election, errNotRecorded)
	}
	slices.SortFunc(ours, func(a, b leaderView) int { return cmp.Compare(b.rev, a.rev) })
	r := ours[min(quorum, len(ours))-1]
	slices.SortFunc(holders, func(a, b leaderView) int { return cmp.Compare(b.ttl, a.ttl) })
	return Leader{Value: r.value, Term: r.term, Rev: r.rev, TTL: holders[quorum-1].ttl}, nil
}
