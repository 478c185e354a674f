package redlock_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// clusterNode starts a redis-server in cluster mode that owns every slot (a
// cluster of one node): it enforces the one-slot rule of scripts as any
// cluster node does. It is stopped when t ends.
func clusterNode(t *testing.T) pool.Pool {
	t.Helper()
	bin := redistest.Binary(t)
	port, err := redistest.FreePort()
	require.NoError(t, err)
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "no", "--cluster-enabled", "yes",
		"--cluster-config-file", filepath.Join(dir, "nodes.conf"), "--logfile", filepath.Join(dir, "redis.log"))
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := "127.0.0.1:" + strconv.Itoa(port)
	raw := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = raw.Close() })
	require.Eventually(t, func() bool { return raw.Ping(bg()).Err() == nil }, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, raw.Do(bg(), "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err())
	require.Eventually(t, func() bool {
		info, err := raw.ClusterInfo(bg()).Result()
		return err == nil && strings.Contains(info, "cluster_state:ok")
	}, 10*time.Second, 10*time.Millisecond)
	p, err := pool.FromURL("redis://" + addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func TestRealMultiLockOnClusterNodesNeedsOneSlot(t *testing.T) {
	pools := []pool.Pool{clusterNode(t), clusterNode(t), clusterNode(t)}
	c := newClient(t, pools)

	_, err := c.TryLockAll(bg(), []string{"cart:1", "cart:2"}, 10*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	var ne *redlock.NodeError
	require.ErrorAs(t, err, &ne)
	assert.ErrorContains(t, err, "CROSSSLOT", "each node refuses keys of several slots")

	for _, fenced := range []bool{false, true} {
		var opts []redlock.LockOption
		if fenced {
			opts = append(opts, redlock.WithFencing())
		}
		l, err := c.TryLockAll(bg(), []string{"{cart}:1", "{cart}:2"}, 10*time.Second, opts...)
		require.NoError(t, err, "one hash tag: one slot, with the companion keys (fenced %v)", fenced)
		require.NoError(t, l.Extend(bg(), 10*time.Second))
		require.NoError(t, l.Unlock(bg()))
	}
}
