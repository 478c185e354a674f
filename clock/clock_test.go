package clock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/clock"
)

func TestFakeTimersFireInOrderWhenDue(t *testing.T) {
	start := time.Unix(1000, 0)
	f := clock.NewFake(start)
	t1 := f.NewTimer(10 * time.Millisecond)
	t2 := f.NewTimer(5 * time.Millisecond)
	require.Equal(t, 2, f.Timers())

	f.Advance(4 * time.Millisecond)
	assertNotFired(t, t1)
	assertNotFired(t, t2)

	f.Advance(1 * time.Millisecond)
	assert.Equal(t, start.Add(5*time.Millisecond), <-t2.C())
	assertNotFired(t, t1)

	f.Advance(time.Hour)
	assert.Equal(t, start.Add(time.Hour+5*time.Millisecond), <-t1.C())
	assert.Zero(t, f.Timers())
	assert.Equal(t, time.Hour+5*time.Millisecond, f.Since(start))
}

func TestFakeStopAndImmediateTimer(t *testing.T) {
	f := clock.NewFake(time.Unix(0, 0))
	tm := f.NewTimer(time.Second)
	assert.True(t, tm.Stop())
	assert.False(t, tm.Stop())
	f.Advance(2 * time.Second)
	assertNotFired(t, tm)

	now := f.NewTimer(0)
	select {
	case <-now.C():
	default:
		t.Fatal("a timer of zero duration must fire at once")
	}
}

func TestFakeBlockUntil(t *testing.T) {
	f := clock.NewFake(time.Unix(0, 0))
	ch := f.BlockUntil(1)
	select {
	case <-ch:
		t.Fatal("no timer pending yet")
	default:
	}
	f.NewTimer(time.Second)
	<-ch
}

func TestRealClock(t *testing.T) {
	var c clock.Real
	start := c.Now()
	tm := c.NewTimer(time.Millisecond)
	<-tm.C()
	assert.GreaterOrEqual(t, c.Since(start), time.Millisecond)
	assert.False(t, tm.Stop())
}

func assertNotFired(t *testing.T, tm clock.Timer) {
	t.Helper()
	select {
	case <-tm.C():
		t.Fatal("timer fired early")
	default:
	}
}
