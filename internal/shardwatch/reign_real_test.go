package shardwatch_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/internal/shardwatch"
	"github.com/redlockgo/redlock/pool"
)

// TestRealReignMarker runs reign.lua on a real cluster master under each
// marker a shard may carry, and checks which ones make it report a
// takeover (reign.lua's rule for <taken>).
func TestRealReignMarker(t *testing.T) {
	c := redistest.StartCLIClusters(t, 1, 3, 0, redistest.AOFAlways)[0]
	addrs := c.Addrs()
	p, err := pool.FromURL("redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr="))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	const key = "orders:42"
	m := c.MasterOf(key).Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	read := func() shardwatch.Reign {
		t.Helper()
		r, err := shardwatch.Read(ctx, p, key, time.Hour)
		require.NoError(t, err)
		return r
	}

	first := read()
	assert.False(t, first.Promoted || first.TookOver, "a new shard: %+v", first)
	myid, err := m.Do(ctx, "CLUSTER", "MYID").Text()
	require.NoError(t, err)
	assert.Equal(t, myid, first.NodeID)
	markers, err := m.Keys(ctx, "redlock:reign{*}").Result()
	require.NoError(t, err)
	require.Len(t, markers, 1, "the shard's marker, on its master")
	f := strings.Fields(m.Get(ctx, markers[0]).Val())
	require.Len(t, f, 5, "replid, first sight, node, epoch, taken: %v", f)
	require.Equal(t, []string{first.ReplID, myid, "-1"}, []string{f[0], f[2], f[4]})
	seen, err := strconv.ParseInt(f[1], 10, 64)
	require.NoError(t, err)
	epoch := f[3]
	other := strings.Repeat("ab", 20) // another reign's replication id

	for _, tc := range []struct {
		name     string
		marker   string
		tookOver bool
		atLeast  time.Duration // of Taken
	}{
		{"this reign, no takeover known", fmt.Sprintf("%s %d %s %s -1", first.ReplID, seen, myid, epoch), false, 0},
		{"this reign keeps a takeover it knew of", fmt.Sprintf("%s %d %s %s %d", first.ReplID, seen, myid, epoch, seen-4000), true, 4 * time.Second},
		{"an earlier run of this node, no takeover known", fmt.Sprintf("%s %d %s %s -1", other, seen, myid, epoch), false, 0},
		{"an earlier run of this node after a takeover", fmt.Sprintf("%s %d %s %s %d", other, seen, myid, epoch, seen-5000), true, 5 * time.Second},
		{"another node wrote it", fmt.Sprintf("%s %d %s %s -1", other, seen, strings.Repeat("cd", 20), epoch), true, 0},
		{"this node under another epoch", fmt.Sprintf("%s %d %s 999 -1", other, seen, myid), true, 0},
		{"an earlier version's marker of another reign", fmt.Sprintf("%s %d", other, seen), true, 0},
		{"an earlier version's marker of this reign", fmt.Sprintf("%s %d", first.ReplID, seen-3000), true, 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, m.Set(ctx, markers[0], tc.marker, time.Hour).Err())
			r := read()
			assert.Equal(t, tc.tookOver, r.TookOver, "%+v", r)
			assert.GreaterOrEqual(t, r.Taken, tc.atLeast)
			assert.False(t, r.Promoted)
			again := read() // what the first read wrote is kept
			assert.Equal(t, tc.tookOver, again.TookOver, "%+v", again)
			assert.GreaterOrEqual(t, again.Taken, r.Taken)
		})
	}
}
