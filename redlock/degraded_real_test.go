package redlock_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// logCapture is a slog.Handler that keeps every record.
type logCapture struct {
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	level slog.Level
	msg   string
	attrs map[string]string
}

func (h *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (h *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logCapture) WithGroup(string) slog.Handler            { return h }

func (h *logCapture) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{level: r.Level, msg: r.Message, attrs: map[string]string{}}
	r.Attrs(func(a slog.Attr) bool {
		rec.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, rec)
	h.mu.Unlock()
	return nil
}

// with returns the records logged with msg.
func (h *logCapture) with(msg string) []logRecord {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []logRecord
	for _, r := range h.records {
		if r.msg == msg {
			out = append(out, r)
		}
	}
	return out
}

// lockUnlock takes and releases key on c, then waits for the stragglers,
// so that every node's answer has been judged.
func lockUnlock(t *testing.T, c *redlock.Client, key string) {
	t.Helper()
	l, err := c.TryLock(t.Context(), key, 10*time.Second)
	require.NoError(t, err)
	c.WaitIdle()
	require.NoError(t, l.Unlock(t.Context()))
	c.WaitIdle()
}

// TestDegradedNodeIsWarnedOnce stops one of five nodes while locks keep
// succeeding: one Warn line names it (not one per operation), NodeStates
// reports it failing, and once it is back one Info line says so. In a
// synctest bubble: under load, a live node's answer past the node timeout
// would be a change of state too.
func TestDegradedNodeIsWarnedOnce(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		nodes := newBubbleNodes(t, 5)
		logs := &logCapture{}
		c := newClient(t, nodes.pools, redlock.WithLogger(slog.New(logs)))
		lockUnlock(t, c, "deg")
		require.Empty(t, logs.with("redlock: node degraded"), "all nodes answer")
		addrs := make([]string, 5)
		for _, s := range c.NodeStates() {
			addrs[s.Node] = s.Addr
		}

		nodes.Stop(2)
		for range 20 {
			lockUnlock(t, c, "deg")
		}
		warned := logs.with("redlock: node degraded")
		require.Len(t, warned, 1, "one line for the node's change, not one per operation: %v", warned)
		w := warned[0]
		assert.Equal(t, slog.LevelWarn, w.level)
		assert.Equal(t, "2", w.attrs["node"])
		assert.Equal(t, addrs[2], w.attrs["addr"])
		assert.Equal(t, "failing", w.attrs["state"])
		assert.Equal(t, "4", w.attrs["ok"])
		assert.Equal(t, "3", w.attrs["needed"])
		assert.NotEmpty(t, w.attrs["error"])

		states := c.NodeStates()
		require.Len(t, states, 5)
		for i, s := range states {
			assert.Equal(t, i, s.Node)
			assert.Equal(t, addrs[i], s.Addr)
			if i == 2 {
				assert.Equal(t, redlock.StateFailing, s.State)
				assert.Error(t, s.Err)
			} else {
				assert.Equal(t, redlock.StateOK, s.State, "node %d", i)
				assert.NoError(t, s.Err)
			}
		}

		nodes.Start(2)
		for range 10 {
			if c.NodeStates()[2].State == redlock.StateOK {
				break
			}
			lockUnlock(t, c, "deg")
		}
		require.Equal(t, redlock.StateOK, c.NodeStates()[2].State, "node 2 answers again")
		lockUnlock(t, c, "deg") // the success after which the recovery is logged
		back := logs.with("redlock: node ok again")
		require.Len(t, back, 1, "%v", back)
		assert.Equal(t, slog.LevelInfo, back[0].level)
		assert.Equal(t, "2", back[0].attrs["node"])
		assert.Equal(t, "failing", back[0].attrs["was"])
		assert.Len(t, logs.with("redlock: node degraded"), 1)
		for _, s := range c.NodeStates() {
			assert.Equal(t, redlock.StateOK, s.State, "node %d", s.Node)
		}
	})
}

// TestDegradedWarningIsRateLimited flaps one fake node: a change back to
// failing within a minute of the last warning is not logged, one after it
// is.
func TestDegradedWarningIsRateLimited(t *testing.T) {
	fn := newFakeNodes(t, 3)
	clk := fakeClock()
	logs := &logCapture{}
	c := newClient(t, fn.pools, redlock.WithTimeSource(clk), redlock.WithQuarantine(0), redlock.WithLogger(slog.New(logs)))
	down := errors.New("connection refused")
	flap := func() {
		fn.faults[1].Fail(down)
		lockUnlock(t, c, "flap")
		fn.faults[1].Fail(nil)
		lockUnlock(t, c, "flap")
	}
	flap()
	require.Len(t, logs.with("redlock: node degraded"), 1)
	require.Len(t, logs.with("redlock: node ok again"), 1)
	clk.Advance(30 * time.Second)
	flap()
	assert.Len(t, logs.with("redlock: node degraded"), 1, "within the minute")
	assert.Len(t, logs.with("redlock: node ok again"), 1, "no warning to end")
	clk.Advance(31 * time.Second)
	flap()
	assert.Len(t, logs.with("redlock: node degraded"), 2, "after the minute")
	assert.Len(t, logs.with("redlock: node ok again"), 2)
}

// TestFewNodesAreWarnedAtNew checks the Warn of New over fewer than three
// nodes, and its absence over three.
func TestFewNodesAreWarnedAtNew(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	for _, n := range []int{1, 2, 3} {
		logs := &logCapture{}
		newClient(t, pools[:n], redlock.WithLogger(slog.New(logs)))
		few := logs.with("redlock: fewer than three nodes tolerate no node failure")
		if n == 3 {
			assert.Empty(t, few)
			continue
		}
		require.Len(t, few, 1, "%d nodes", n)
		assert.Equal(t, slog.LevelWarn, few[0].level)
		assert.Equal(t, map[string]string{"nodes": strconv.Itoa(n), "needed": strconv.Itoa(n), "reason": few[0].attrs["reason"]}, few[0].attrs)
		assert.Contains(t, few[0].attrs["reason"], "a lock needs every node")
	}
}

// TestRealEvictingNodeIsWarnedOnce runs one node of three with
// maxmemory-policy allkeys-lru: one Warn names it, however many locks.
func TestRealEvictingNodeIsWarnedOnce(t *testing.T) {
	servers := []*redistest.Server{
		redistest.Start(t, redistest.NoPersistence),
		redistest.StartWith(t, redistest.NoPersistence, "--maxmemory-policy", "allkeys-lru"),
		redistest.Start(t, redistest.NoPersistence),
	}
	pools := make([]pool.Pool, len(servers))
	for i, s := range servers {
		p, err := pool.FromURL(s.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	logs := &logCapture{}
	c := newClient(t, pools, redlock.WithLogger(slog.New(logs)))
	for range 5 {
		lockUnlock(t, c, "evict")
	}
	warned := logs.with("redlock: node may evict lock keys")
	require.Len(t, warned, 1, "%v", warned)
	assert.Equal(t, slog.LevelWarn, warned[0].level)
	assert.Equal(t, "1", warned[0].attrs["node"])
	assert.Equal(t, servers[1].Addr(), warned[0].attrs["addr"])
	assert.Equal(t, "allkeys-lru", warned[0].attrs["maxmemory_policy"])
	assert.Empty(t, logs.with("redlock: node degraded"))
}

// TestRealScriptlessUserIsRefused gives every node an ACL user that may
// SET but not run one of the scripts: the acquisition fails naming the
// missing command, and no key is left on any node.
func TestRealScriptlessUserIsRefused(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name, rules, missing string
	}{
		{"NoEvalNorEvalsha", "+@all -eval -evalsha", "EVALSHA"},
		{"NoEval", "+@all -eval", "EVAL"},
		{"OnlySetGet", "+set +get +info +config|get", "EVALSHA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers := redistest.StartN(t, 3, redistest.NoPersistence)
			pools := make([]pool.Pool, len(servers))
			for i, s := range servers {
				admin := s.Client(t)
				args := []any{"ACL", "SETUSER", "locker", "on", ">pw", "~*", "&*"}
				for _, r := range strings.Fields(tc.rules) {
					args = append(args, r)
				}
				require.NoError(t, admin.Do(bg(), args...).Err())
				p, err := pool.FromURL(s.URL(), pool.WithCredentials("locker", "pw"))
				require.NoError(t, err)
				t.Cleanup(func() { _ = p.Close() })
				pools[i] = p
			}
			c := newClient(t, pools)
			_, err := c.TryLock(bg(), "acl", 10*time.Second)
			require.ErrorIs(t, err, redlock.ErrNotObtained)
			assert.ErrorContains(t, err, "may not run "+tc.missing)
			assert.ErrorContains(t, err, "NOPERM")
			c.WaitIdle()
			for i, s := range servers {
				keys, err := s.Client(t).Keys(bg(), "*").Result()
				require.NoError(t, err)
				keys = slices.DeleteFunc(keys, func(k string) bool { return k == pool.FreshStartKey })
				assert.Empty(t, keys, "node %d", i)
			}
			for _, s := range c.NodeStates() {
				assert.Equal(t, redlock.StateFailing, s.State, "node %d", s.Node)
			}
		})
	}
}
