package redlock

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/pool"
)

// The observer's rules, one poll at a time on in-memory nodes: it sends a
// change, skips what it sent, never goes back in term, waits for a new
// leader's record, and sends one zero Leader on a lapse.
func TestObserverPollRules(t *testing.T) {
	var servers []*miniredis.Miniredis
	var pools []pool.Pool
	for range 3 {
		s := miniredis.RunT(t)
		p, err := pool.FromURL("redis://" + s.Addr())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		servers, pools = append(servers, s), append(pools, p)
	}
	c, err := New(pools, WithNodeTimeout(time.Second))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	out := make(chan Leader, 10)
	o := &observer{c: c, election: "o", out: out}
	key, err := keyspace.Election("o")
	require.NoError(t, err)
	record := keyspace.Standalone{}.Leader(key)
	set := func(token, value, term, rev string) {
		for _, s := range servers {
			require.NoError(t, s.Set(key, token))
			if value != "" {
				s.HSet(record, "token", token, "value", value, "term", term, "rev", rev)
			} else {
				s.Del(record)
			}
		}
	}
	poll := func() []Leader {
		require.True(t, o.poll(context.Background()))
		var got []Leader
		for len(out) > 0 {
			ld := <-out
			ld.TTL = 0
			got = append(got, ld)
		}
		return got
	}

	assert.Empty(t, poll(), "nobody leads, nobody was sent: nothing")
	set("t5", "a", "5", "0")
	assert.Equal(t, []Leader{{Value: "a", Term: 5}}, poll())
	assert.Empty(t, poll(), "no change")
	set("t5", "a2", "5", "1")
	assert.Equal(t, []Leader{{Value: "a2", Term: 5, Rev: 1}}, poll(), "a proclamation")
	set("t3", "stale", "3", "0")
	assert.Empty(t, poll(), "never a lower term")
	set("t6", "", "", "")
	assert.Empty(t, poll(), "a new leader without its record yet: no lapse")
	set("t6", "b", "6", "0")
	assert.Equal(t, []Leader{{Value: "b", Term: 6}}, poll())
	for _, s := range servers {
		s.Del(key)
	}
	assert.Equal(t, []Leader{{}}, poll(), "a lapse")
	assert.Empty(t, poll(), "one zero Leader per lapse")
	set("t4", "older", "4", "0")
	assert.Empty(t, poll(), "after a lapse too, never a lower term")
	set("t7", "c", "7", "0")
	assert.Equal(t, []Leader{{Value: "c", Term: 7}}, poll())
}
