package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// viaProxy returns a client that reaches n the way the lock does: through
// its proxy, without retries, each call bounded by its context.
func viaProxy(t *testing.T, n *cluster.Node) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: n.Addr(), MaxRetries: -1, ContextTimeoutEnabled: true, DisableIdentity: true,
		DialTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func ping(c *redis.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return c.Ping(ctx).Err()
}

// isTimeout reports a call ended by its deadline: go-redis reports the
// context's deadline on the socket as a net.Error timeout.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

func requireTimeout(t *testing.T, err error, msg string) {
	t.Helper()
	require.Error(t, err, msg)
	require.True(t, isTimeout(err), "%s: want a timeout, got %v", msg, err)
}

func TestRestartKeepsAddressAndPersistence(t *testing.T) {
	c := cluster.Start(t, cluster.WithNodes(3),
		cluster.WithNodePersistence(1, cluster.AOFEverySec),
		cluster.WithNodePersistence(2, cluster.AOFAlways))
	ctx := t.Context()
	t.Logf("backend %s", c.Backend())

	wantFsync := []string{"", "everysec", "always"}
	for i, n := range c.Nodes() {
		cfg, err := n.Client().ConfigGet(ctx, "append*").Result()
		require.NoError(t, err)
		if wantFsync[i] == "" {
			require.Equal(t, "no", cfg["appendonly"], n.String())
		} else {
			require.Equal(t, "yes", cfg["appendonly"], n.String())
			require.Equal(t, wantFsync[i], cfg["appendfsync"], n.String())
		}
		require.NoError(t, viaProxy(t, n).Set(ctx, "k", "v", time.Minute).Err())
	}

	addrs := make([]string, c.Len())
	for i, n := range c.Nodes() {
		addrs[i] = n.Addr()
		require.NoError(t, n.Restart(ctx))
	}
	for i, n := range c.Nodes() {
		require.Equal(t, addrs[i], n.Addr(), "the client-facing address survives a restart")
		require.NoError(t, ping(viaProxy(t, n), 5*time.Second), n.String())
	}

	e, err := c.Node(0).Peek(ctx, "k")
	require.NoError(t, err)
	require.False(t, e.Exists, "a node without persistence forgets")
	e, err = c.Node(2).Peek(ctx, "k")
	require.NoError(t, err)
	require.True(t, e.Exists, "appendfsync always keeps every acknowledged write")
	require.Equal(t, "v", e.Value)
	require.Greater(t, e.TTL, time.Duration(0))
	require.LessOrEqual(t, e.TTL, time.Minute)
}

func TestNodeFaults(t *testing.T) {
	c := cluster.Start(t, cluster.WithNodes(1))
	n := c.Node(0)
	ctx := t.Context()
	// Calls expected to time out get short; calls expected to succeed get
	// ample time, since the machine may be loaded.
	const short = 300 * time.Millisecond

	t.Run("kill and start", func(t *testing.T) {
		rc := viaProxy(t, n)
		require.NoError(t, n.Kill(ctx))
		require.Error(t, ping(rc, 5*time.Second), "a killed node refuses")
		require.NoError(t, n.Kill(ctx), "killing twice is harmless")
		require.ErrorIs(t, n.Pause(ctx), cluster.ErrKilled)
		require.NoError(t, n.Start(ctx))
		require.NoError(t, ping(rc, 5*time.Second))
	})

	t.Run("pause", func(t *testing.T) {
		rc := viaProxy(t, n)
		require.NoError(t, n.Pause(ctx))
		requireTimeout(t, ping(rc, short), "a paused node does not answer")
		require.NoError(t, n.Unpause(ctx))
		require.NoError(t, ping(rc, 5*time.Second))
	})

	t.Run("partition", func(t *testing.T) {
		rc := viaProxy(t, n)
		require.NoError(t, ping(rc, 5*time.Second))
		require.NoError(t, n.Partition())
		require.Error(t, ping(rc, 5*time.Second), "open and new connections are cut")
		_, err := n.Peek(ctx, "x")
		require.NoError(t, err, "the direct client ignores network faults")
		require.NoError(t, n.Heal())
		require.NoError(t, ping(rc, 5*time.Second))
	})

	t.Run("slow", func(t *testing.T) {
		rc := viaProxy(t, n)
		require.NoError(t, n.Slow(150*time.Millisecond))
		start := time.Now()
		require.NoError(t, ping(rc, 5*time.Second))
		require.GreaterOrEqual(t, time.Since(start), 150*time.Millisecond)
		require.NoError(t, n.Heal())
	})

	t.Run("blackhole replies", func(t *testing.T) {
		rc := viaProxy(t, n)
		// A new connection's handshake would be blackholed too, and the
		// command never sent: open the connection first.
		require.NoError(t, ping(rc, 5*time.Second))
		require.NoError(t, n.Blackhole(cluster.Downstream))
		tctx, cancel := context.WithTimeout(ctx, short)
		err := rc.Set(tctx, "bh", "landed", time.Minute).Err()
		cancel()
		requireTimeout(t, err, "the reply never comes")
		// The command was written before the client's deadline (short);
		// the proxy forwards it upstream at once and the node runs it when
		// it reads it: 5s is over fifteen such deadlines, for a loaded
		// machine.
		redistest.WaitFor(t, 5*time.Second, "the blackholed command itself to run", func() (bool, string) {
			e, err := n.Peek(ctx, "bh")
			return err == nil && e.Value == "landed", fmt.Sprintf("%q, %v", e.Value, err)
		})
		require.NoError(t, n.Heal())
		require.NoError(t, ping(rc, 5*time.Second))
	})

	t.Run("blackhole commands", func(t *testing.T) {
		rc := viaProxy(t, n)
		require.NoError(t, n.Blackhole(cluster.Upstream))
		tctx, cancel := context.WithTimeout(ctx, short)
		err := rc.Set(tctx, "bh2", "landed", time.Minute).Err()
		cancel()
		requireTimeout(t, err, "the command is dropped")
		e, err := n.Peek(ctx, "bh2")
		require.NoError(t, err)
		require.False(t, e.Exists, "the command never reached the node")
		require.NoError(t, n.Heal())
	})

	t.Run("reset peer", func(t *testing.T) {
		rc := viaProxy(t, n)
		require.NoError(t, n.ResetPeer(cluster.Upstream))
		err := ping(rc, 5*time.Second)
		require.Error(t, err)
		require.False(t, isTimeout(err), "reset, not a timeout: %v", err)
		require.NoError(t, n.Heal())
		require.NoError(t, ping(rc, 5*time.Second))
	})

	t.Run("reset", func(t *testing.T) {
		require.NoError(t, n.Pause(ctx))
		require.NoError(t, n.Partition())
		require.NoError(t, n.Delay(cluster.Both, 50*time.Millisecond, 10*time.Millisecond))
		require.Equal(t, "node 0 ("+n.Addr()+", none, paused, partitioned, latency_downstream, latency_upstream)", n.String())
		require.NoError(t, c.Reset(ctx))
		require.Equal(t, "node 0 ("+n.Addr()+", none, running)", n.String())
		require.NoError(t, ping(viaProxy(t, n), 5*time.Second))
		require.NoError(t, c.FlushAll(ctx))
	})
}

func TestOptionsAreValidated(t *testing.T) {
	for name, opt := range map[string]cluster.Option{
		"no nodes":          cluster.WithNodes(0),
		"bad persistence":   cluster.WithPersistence(cluster.Persistence(9)),
		"node out of range": cluster.WithNodePersistence(7, cluster.AOFAlways),
		"unknown backend":   cluster.WithBackend("vm"),
		"empty image":       cluster.WithImage(""),
	} {
		t.Run(name, func(t *testing.T) {
			ft := &fatalRecorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				cluster.Start(ft, opt)
			}()
			<-done
			require.True(t, ft.failed, "Start accepted %s", name)
		})
	}
}

// fatalRecorder notes Fatal instead of failing the test, and stops the
// goroutine that called it, as testing.T does.
type fatalRecorder struct {
	testing.TB
	failed bool
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.failed = true
	runtime.Goexit()
}

func (f *fatalRecorder) Fatalf(format string, args ...any) { f.Fatal() }

func TestFlushAllKeepsTheFreshStartDeclaration(t *testing.T) {
	ctx := context.Background()
	c := cluster.Start(t, cluster.WithNodes(1))
	rc := viaProxy(t, c.Nodes()[0])
	declared, err := rc.Get(ctx, pool.FreshStartKey).Result()
	require.NoError(t, err, "Start declares every node fresh")
	require.NoError(t, rc.Set(ctx, "some-lock", "token", 0).Err())
	require.NoError(t, c.FlushAll(ctx))
	require.ErrorIs(t, rc.Get(ctx, "some-lock").Err(), redis.Nil, "FlushAll deletes the keys")
	kept, err := rc.Get(ctx, pool.FreshStartKey).Result()
	require.NoError(t, err, "but keeps the declaration: without it every new connection finds the node quarantined")
	require.Equal(t, declared, kept)
}

// SetClock moves a node's wall clock (TIME, and so expiry) across a
// restart; a cluster without fake clocks refuses it.
func TestFakeClocks(t *testing.T) {
	c := cluster.Start(t, cluster.WithNodes(1), cluster.WithFakeClocks())
	n := c.Node(0)
	skew := func() time.Duration {
		t.Helper()
		before := time.Now()
		node, err := n.Client().Time(t.Context()).Result()
		require.NoError(t, err)
		return node.Sub(before)
	}
	require.InDelta(t, 0, skew().Seconds(), 2, "the real clock at first")
	require.NoError(t, n.SetClock(time.Hour, 1))
	require.InDelta(t, time.Hour.Seconds(), skew().Seconds(), 2, "a jump of an hour")
	require.NoError(t, n.Restart(t.Context()))
	require.InDelta(t, time.Hour.Seconds(), skew().Seconds(), 2, "the jump survives a restart")
	require.NoError(t, n.SetClock(0, 1))
	require.InDelta(t, 0, skew().Seconds(), 2, "the real clock again")

	plain := cluster.Start(t, cluster.WithNodes(1))
	require.Error(t, plain.Node(0).SetClock(time.Second, 1))
}
