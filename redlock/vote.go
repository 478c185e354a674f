package redlock

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
)

// This file is the one place where a node's answer is judged. Every vote
// that can make or keep a hold (an acquisition of any kind, an extension, a
// fence phase, a waiter's round and grant) passes health, so that a node
// the Client must not trust (restart quarantine, a cluster shard's
// failover, clock check) counts for nobody, whatever the lock kind.
// TestOneJudge keeps the decision fan-outs here: a guarantee written at
// each call site reaches only the sites that remembered it.
//
// The same answers keep each node's state (node.Set.Note for its reach,
// node.Set.Health for its trust; Client.NodeStates, degraded.go): atomic
// stores on a change only, so the judged path stays free of locks and
// allocations.

// decide runs op on every node (fanout.QuorumOn: timeout, grace and place as
// there) and returns at the decision. Each node's answer is noted (silence)
// and judged (vote) before it counts; late receives stragglers' judged
// votes. key is the decision's lock key (a multi-lock's first: on a
// cluster node its keys share a slot), which a node's health may read
// (node.Set.Health: a cluster node's shard).
func (c *Client) decide(ctx context.Context, key string, timeout, grace time.Duration, op fanout.Op, late fanout.Late, place func(int) string) fanout.Result {
	return fanout.Decide(ctx, &c.life.calls, c.nodes.Len(), c.nodes.Quorum(), timeout, grace, op, c.judgeOf(key), late, place)
}

// judgeOf returns decide's fanout.Judge for a decision on key: the Client's
// judge, bound once in New, when no node's health reads the key (no
// allocation on the plain path); else one bound to key.
func (c *Client) judgeOf(key string) fanout.Judge {
	if c.judge != nil {
		return c.judge
	}
	return func(ctx context.Context, i int, ok bool, err error) (bool, error) {
		c.nodes.Note(i, err)
		return c.vote(ctx, i, key, ok, err)
	}
}

// judgeVote is the Client's judge (Client.judge) when no node's health
// reads the key (node.Set.HealthReadsAny): it notes node i's silence and
// judges its answer (vote), with no key.
func (c *Client) judgeVote(ctx context.Context, i int, ok bool, err error) (bool, error) {
	c.nodes.Note(i, err)
	return c.vote(ctx, i, "", ok, err)
}

// confirm runs a release on every node and returns at the majority. Its
// answers are noted (silence) but not judged: a release only gives a hold
// back, which is safe on any node, and an unhealthy node that released our
// token holds nothing of ours any more.
func (c *Client) confirm(ctx context.Context, timeout time.Duration, op fanout.Op) fanout.Result {
	return fanout.Decide(ctx, &c.life.calls, c.nodes.Len(), c.nodes.Quorum(), timeout, 0, op, c.noted, nil, nil)
}

// note is the judge of the fan-outs whose answers are not judged
// (confirm): it notes node i's silence and lets the answer stand. New
// binds it once (Client.noted).
func (c *Client) note(_ context.Context, i int, ok bool, err error) (bool, error) {
	c.nodes.Note(i, err)
	return ok, err
}

// each runs op on nodes (nil: none) in parallel, each call bounded by
// timeout, and returns every node's answer (fanout.Each): the fan-out of
// the calls that decide nothing (a background release, healing, a status
// or leader read, a record's removal). Its answers are noted (silence),
// not judged: the callers either give a hold back or only report.
func (c *Client) each(ctx context.Context, nodes []int, timeout time.Duration, op fanout.Op) []fanout.Vote {
	return fanout.Each(ctx, &c.life.calls, nodes, timeout, func(ctx context.Context, i int) (bool, error) {
		ok, err := op(ctx, i)
		c.nodes.Note(i, err)
		return ok, err
	})
}

// call runs op on node i alone, in the background, bounded by timeout (a
// waiter's round: its rounds on the nodes are not one fan-out, each runs
// when the waiter's state asks for it). Its answer is noted and judged as
// a decision's votes are (vote), and done receives the judged outcome: a
// yes that must not count becomes the node's health error. The call runs
// inside a registered operation, so Close waits for it.
func (c *Client) call(key string, i int, timeout time.Duration, op func(ctx context.Context) (bool, error), done func(err error)) {
	c.life.wg.Add(1)
	go func() {
		defer c.life.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		ok, err := op(ctx)
		c.nodes.Note(i, err)
		_, err = c.vote(ctx, i, key, ok, err)
		done(err)
	}()
}

// vote turns node i's yes into an error when the node must not count (see
// health); any other answer stands. It is called after the node's answer
// arrived, so that the identity health reads is the one the answer was
// given under.
func (c *Client) vote(ctx context.Context, i int, key string, ok bool, err error) (bool, error) {
	if !ok || err != nil {
		return ok, err
	}
	if herr := c.health(ctx, i, key); herr != nil {
		return false, herr
	}
	return true, nil
}

// health returns why node i must not count now for key (a quarantine, a
// clock fault, a cluster shard's failover), or nil when it counts: the
// node's checks, chosen once at New (node.Set.Health). It does I/O, bounded
// by ctx, only on a node whose checks read it (node.Set.HealthReads).
func (c *Client) health(ctx context.Context, i int, key string) error {
	return c.nodes.Health(ctx, i, key)
}

// grantHealth is health for a grant message from node i, for a waiter on
// key. A node that restarted grants us the key only after a round of ours
// joined its new queue, on a connection that learned the new run's
// identity first, so the identity read here is that run's. A grant that
// does not count reaches the waiter as that node's error: the node holds
// our token but votes for nobody, and the waiter's next round there judges
// it again. On a node whose health reads it (a cluster node's shard),
// wait.Grants.Deliver calls it in a goroutine of its own, under ctx
// bounded by the node timeout (wait.HubConfig.Reads).
func (c *Client) grantHealth(ctx context.Context, i int, key string) error {
	return c.health(ctx, i, key)
}
