package redlock_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// uncheckedNodes returns three fake nodes: node 0 tells its identity, an
// old run; nodes 1 and 2 are wrappers that do not (no pool.Identifier).
func uncheckedNodes(t *testing.T) []pool.Pool {
	known := knownNodes(t, 1, time.Now())
	fn := newFakeNodes(t, 2)
	return []pool.Pool{known[0], fn.pools[0], fn.pools[1]}
}

// TestUncheckedNodesAreLogged checks that New warns, once per node, of the
// nodes whose restarts the quarantine cannot check, naming each address.
func TestUncheckedNodesAreLogged(t *testing.T) {
	pools := uncheckedNodes(t)
	for _, tc := range []struct {
		name string
		opts []redlock.Option
		want []int
	}{
		{"QuarantineOn", nil, []int{1, 2}},
		{"QuarantineOff", []redlock.Option{redlock.WithQuarantine(0)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			var mu sync.Mutex
			h := slog.NewTextHandler(&lockedWriter{w: &buf, mu: &mu}, &slog.HandlerOptions{Level: slog.LevelWarn})
			newClient(t, pools, append(tc.opts, redlock.WithLogger(slog.New(h)))...)
			mu.Lock()
			out := buf.String()
			mu.Unlock()
			var lines []string
			for line := range strings.Lines(out) {
				lines = append(lines, line)
			}
			require.Len(t, lines, len(tc.want), "one line per unchecked node, at New: %q", out)
			for j, i := range tc.want {
				assert.Contains(t, lines[j], `level=WARN msg="redlock: node restarts not checked"`)
				assert.Contains(t, lines[j], "addr="+pools[i].Addr())
				assert.Contains(t, lines[j], "not a pool.Identifier")
			}
		})
	}
}

// TestStatusShowsUnverifiedNodes checks NodeStatus.Unverified: set on the
// nodes the quarantine cannot age (no identity, or no uptime in it), never
// with the quarantine off.
func TestStatusShowsUnverifiedNodes(t *testing.T) {
	pools := uncheckedNodes(t)
	c := newClient(t, pools)
	st, err := c.Status(bg(), "k")
	require.NoError(t, err)
	unverified := func(st redlock.KeyStatus) []bool {
		out := make([]bool, len(st.Nodes))
		for i, n := range st.Nodes {
			out[i] = n.Unverified
		}
		return out
	}
	assert.Equal(t, []bool{false, true, true}, unverified(st))

	pools[0].(*knownPool).set(pool.Identity{RunID: "hidden", Persistence: pool.PersistencePartial}) // INFO hidden
	st, err = c.Status(bg(), "k")
	require.NoError(t, err)
	assert.Equal(t, []bool{true, true, true}, unverified(st))

	st, err = newClient(t, pools, redlock.WithQuarantine(0)).Status(bg(), "k")
	require.NoError(t, err)
	assert.Equal(t, []bool{false, false, false}, unverified(st))
}
