package redlock_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// fastClock passes a real node's TIME through a clock that runs rate times
// as fast from the first reading. libfaketime cannot run Debian's
// redis-server (it clashes with jemalloc, libfaketime issue #130), so the
// node's own clock cannot be sped up here: this skews its answers instead,
// on a real connection, and leaves every other command alone.
type fastClock struct {
	pool.Pool
	rate float64

	mu    sync.Mutex
	first time.Duration // the first reading, 0 before it
}

func (p *fastClock) Eval(ctx context.Context, s *pool.Script, keys []string, args ...any) (any, error) {
	v, err := p.Pool.Eval(ctx, s, keys, args...)
	if err != nil || s != scripts.Time {
		return v, err
	}
	arr := v.([]any)
	sec, _ := strconv.ParseInt(arr[0].(string), 10, 64)
	usec, _ := strconv.ParseInt(arr[1].(string), 10, 64)
	now := time.Duration(sec)*time.Second + time.Duration(usec)*time.Microsecond
	p.mu.Lock()
	if p.first == 0 {
		p.first = now
	}
	skewed := p.first + time.Duration(float64(now-p.first)*p.rate)
	p.mu.Unlock()
	return []any{fmt.Sprint(int64(skewed / time.Second)), fmt.Sprint(int64(skewed%time.Second) / 1000)}, nil
}

// Node 0's clock runs at twice the speed of ours: it would expire a lock's
// key in half its TTL. The clock check reports it with the measured rate,
// and its yes stops counting: with node 1 paused, no lock can be built on it.
func TestRealClockCheckFindsAFastClock(t *testing.T) {
	servers, pools := realNodes(t, 3)
	pools[0] = &fastClock{Pool: pools[0], rate: 2}
	faults := make(chan redlock.Event, 10)
	c := newClient(t, pools, redlock.WithClockCheck(50*time.Millisecond), redlock.WithQuarantine(time.Minute),
		redlock.WithObserver(redlock.ObserverFunc(func(_ context.Context, e redlock.Event) {
			if e.Kind == redlock.NodeClockFault {
				faults <- e
			}
		})))

	var e redlock.Event
	select {
	case e = <-faults:
	case <-time.After(10 * time.Second):
		t.Fatal("the fast clock was not reported")
	}
	var ne *redlock.NodeError
	require.ErrorAs(t, e.Err, &ne)
	assert.Equal(t, 0, ne.Node)
	require.ErrorIs(t, e.Err, redlock.ErrNodeClock)
	assert.ErrorContains(t, e.Err, "rate ")
	t.Log(e.Err)

	servers[1].Pause()
	_, err := c.TryLock(bg(), "res", 5*time.Second)
	servers[1].Resume()
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	require.ErrorIs(t, err, redlock.ErrNodeClock, "node 0 does not count")

	c.WaitIdle()
	l, err := c.TryLock(bg(), "res", 5*time.Second)
	require.NoError(t, err, "nodes 1 and 2 are a majority")
	require.NoError(t, l.Unlock(bg()))
}
