package redlock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// The loss is declared by the margin before Until() even when the keeper's
// timers fire up to a millisecond late: the fake clock moves in 1ms steps
// that never land on the loss point itself (they are offset by 0.3ms), so
// each timer fires up to 1ms after its time, as a real one does on a
// loaded machine. A keeper that armed its timer at the loss point itself
// declared the loss 0.3ms after it.
func TestLossDeclaredByTheMarginWhenTimersFireLate(t *testing.T) {
	const ttl = 200 * time.Millisecond // node timeout 10ms, margin 20ms
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	c, err := redlock.New(fn.pools, redlock.WithTimeSource(clk))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	l := tryLockUntilObtained(t, c, ttl, redlock.WithAutoExtend(0))
	for _, f := range fn.faults {
		f.Fail(errDown)
	}
	until := l.Until()
	margin := max(ttl/10, 2*(ttl/20))

	<-clk.BlockUntil(1)
	clk.Advance(300 * time.Microsecond)
	lostAt := advanceUntilLostBy(t, clk, l.Done(), time.Millisecond, until.Add(-margin))

	assert.False(t, lostAt.After(until.Add(-margin)),
		"lost %v before the end of validity; the margin is %v", until.Sub(lostAt), margin)
	assert.True(t, lostAt.After(until.Add(-margin-5*time.Millisecond)),
		"lost %v before the end of validity: far earlier than the margin, %v", until.Sub(lostAt), margin)
	require.ErrorIs(t, l.Err(), redlock.ErrLockLost)
	requireLossCause(t, l.Err(), errDown)
}

// requireLossCause requires a loss's error to carry the nodes' cause,
// or, when the last extension was still on its way at the loss point,
// ErrPending on every node: the fake clock moves 1ms a step as fast as
// the test loops, so on a loaded machine it can reach the loss point before
// the goroutines of an attempt whose nodes answer at once have run (seen once
// in a loaded make test). Either way the loss names each node; that the
// cause of a refused attempt reaches Err is checked with a 1s node timeout
// in TestAutoExtendLossWhenNodesStopAnswering.
func requireLossCause(t *testing.T, err, cause error) {
	t.Helper()
	if errors.Is(err, cause) {
		return
	}
	var qe *redlock.QuorumError
	require.ErrorAs(t, err, &qe, "a loss names each node's cause")
	require.Len(t, qe.Nodes, qe.Total, "a loss names every node: %v", err)
	for _, n := range qe.Nodes {
		require.ErrorIs(t, n.Err, redlock.ErrPending, "want %q, or every node pending (an attempt in flight at the loss point): %v", cause, err)
	}
	t.Logf("the last attempt was in flight at the loss point: %v", err)
}
