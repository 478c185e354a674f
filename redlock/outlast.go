package redlock

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// No silent waits (issue 59). A blocking acquisition on nodes a majority of
// which sits out the restart quarantine cannot succeed before the nodes
// count. When its context's deadline comes sooner it returns at once,
// after the attempt that told the nodes' runs, with an error that names the
// quarantine and when the nodes count (IsUnavailable); without a deadline
// it waits, and says so in one line, to the WithLogger loggers or else to
// slog.Default().

// countsIn returns how long until a majority of the nodes count as far as
// the restart quarantine knows (node.Set.Quarantined: at the most, a
// restarted node's horizon may end it sooner), 0 when they count now.
func (c *Client) countsIn() time.Duration {
	left := make([]time.Duration, c.nodes.Len())
	for i := range left {
		left[i] = c.nodes.Quarantined(i)
	}
	slices.Sort(left)
	return left[c.nodes.Quorum()-1]
}

// outlasted is what a blocking acquisition of key does after an attempt
// that failed with err and did not end the call: it returns the call's
// error when the restart quarantine keeps a majority out past ctx's
// deadline, and nil when the call may go on. A call without deadline that
// starts waiting for the quarantine logs it once (*told).
func (c *Client) outlasted(ctx context.Context, key string, err error, told *bool) error {
	if err != nil && !errors.Is(err, ErrNotObtained) {
		return nil
	}
	left := c.countsIn()
	if left <= 0 {
		return nil
	}
	at := time.Now().Add(left)
	deadline, ok := ctx.Deadline()
	if !ok {
		if !*told {
			*told = true
			c.logWait(ctx, key, left, at)
		}
		return nil
	}
	if deadline.After(at) {
		return nil
	}
	return c.quarantineError(err, left, at, time.Until(deadline))
}

// quarantineError is the error of an acquisition that the restart
// quarantine outlasts: the votes of its last attempt (err, nil for none),
// each node the quarantine keeps out reported as such, with a reason that
// says when a majority counts.
func (c *Client) quarantineError(err error, left time.Duration, at time.Time, until time.Duration) error {
	qe := &QuorumError{Op: "lock", Needed: c.nodes.Quorum(), Total: c.nodes.Len(), sentinel: ErrNotObtained}
	var last *QuorumError
	if errors.As(err, &last) {
		qe.Agreed = last.Agreed
	}
	causes := make([]error, c.nodes.Len())
	if last != nil {
		for _, n := range last.Nodes {
			causes[n.Node] = n.Err
		}
	}
	for i := range causes {
		if q := c.nodes.Quarantined(i); q > 0 {
			causes[i] = fmt.Errorf("%w: counts in %v", ErrNodeQuarantined, q.Truncate(time.Second))
		}
		if causes[i] != nil {
			qe.Nodes = append(qe.Nodes, &NodeError{Node: i, Addr: c.nodes.Addr(i), Err: causes[i]})
		}
	}
	qe.Reason = fmt.Sprintf("the nodes' restart quarantine outlasts the call's deadline (in %v): a majority counts in %v, at %s; "+
		"nodes declared fresh (redlock nodes declare-fresh) or that persist every write count at once",
		until.Truncate(time.Millisecond), left.Truncate(time.Second), at.Format(time.TimeOnly))
	return qe
}

// logWait logs, once per call, that an acquisition of key without deadline
// waits left for the nodes' restart quarantine: to each WithLogger logger,
// or to slog.Default() when there is none.
func (c *Client) logWait(ctx context.Context, key string, left time.Duration, at time.Time) {
	attrs := []slog.Attr{slog.String("key", key), slog.Duration("counts_in", left.Truncate(time.Second)),
		slog.String("at", at.Format(time.TimeOnly)),
		slog.String("reason", "a majority of the nodes restarted less than the quarantine ago without persisting every write (WithQuarantine); declare new nodes fresh (redlock nodes declare-fresh) to skip it")}
	loggers := c.cfg.loggers
	if len(loggers) == 0 {
		loggers = []*slog.Logger{slog.Default()}
	}
	for _, l := range loggers {
		l.LogAttrs(ctx, slog.LevelWarn, "redlock: waiting for the nodes' restart quarantine", attrs...)
	}
}
