package redlock

import (
	"context"
	"errors"
	"time"

	"github.com/redlockgo/redlock/internal/random"
)

// Simultaneous contenders can split the nodes among themselves so that
// none has a majority (three Clients on three nodes, one node each): each
// is refused, and nobody holds the lock. The Redlock description's remedy
// is a retry after a random delay; a call that waits retries anyway, so the
// calls that make one attempt (TryLock, TryRLock, TryAcquirePermit,
// TryLockAll, TryDo, and `redlock run --wait 0` through them) settle a
// split inside the attempt: up to splitRetries more attempts while the
// refusals look like a split, each after a delay drawn at random from
// splitDelay. Failing nodes are no split (maybeSplit): an attempt with a
// node that failed, or with more nodes unanswered than a majority can
// spare, ends as one attempt does. Two contenders that draw close delays
// can split again, hence more than one (TestSimultaneousTryLocksHaveAWinner).

// maybeSplit reports whether err, a refused attempt, may be a split among
// simultaneous contenders: this attempt won at least one node, every node
// that did not agree said the key is held or had not answered, and those
// that had not answered are few enough that the nodes which did could
// make a majority. A key held by one owner on every node gives no yes at
// all, so a plain refusal costs nothing more. Nor is it a split when a
// majority of the nodes failed or had not answered: the attempt ends, as
// one attempt does. (Before, an attempt cut by the contended grace with
// three of five nodes silent, one yes and one "taken", settled, and its
// next attempts took the lock once the failing nodes answered again:
// issue 60.)
func maybeSplit(err error) bool {
	var qe *QuorumError
	if !errors.As(err, &qe) || qe.Agreed == 0 || qe.Reason != "" || qe.ctxErr != nil {
		return false
	}
	unanswered := 0
	for _, n := range qe.Nodes {
		switch {
		case errors.Is(n.Err, ErrPending):
			unanswered++
		case !errors.Is(n.Err, ErrTaken):
			return false
		}
	}
	return unanswered <= qe.Total-qe.Needed
}

// splitDelay is the random delay before the attempt that settles a split:
// between 1ms and a quarter of the node timeout, at most 50ms. The first
// contender to try again finds the others' failed attempts released (their
// cleanup follows their decision by a round trip) and takes every node.
func splitDelay(timeout time.Duration) time.Duration {
	hi := max(min(timeout/4, 50*time.Millisecond), 2*time.Millisecond)
	return time.Millisecond + random.N(hi-time.Millisecond)
}

// splitRetries is how many more attempts settle a split at most.
const splitRetries = 2

// settleSplit runs try once and, while its refusal may be a split
// (maybeSplit), again after splitDelay, up to splitRetries times, unless
// ctx ends or the Client closes first. It returns the last attempt's error
// and how many attempts it made.
func (c *Client) settleSplit(ctx context.Context, timeout time.Duration, try func() error) (int, error) {
	err := try()
	attempts := 1
	for ; attempts <= splitRetries && err != nil && maybeSplit(err); attempts++ {
		t := c.cfg.clock.NewTimer(splitDelay(timeout))
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return attempts, withContext(err, ctx.Err())
		case <-c.life.closing:
			t.Stop()
			return attempts, err
		}
		err = try()
	}
	return attempts, err
}
