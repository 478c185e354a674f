package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

const (
	startTimeout   = 3 * time.Minute
	cleanupTimeout = time.Minute
)

// Cluster is a set of independent Redis masters for one test, each behind
// its own fault-injecting proxy. Start creates it; it is removed when the
// test ends.
type Cluster struct {
	tb      testing.TB
	backend Backend
	be      backend
	nodes   []*Node
	pools   []pool.Pool
	// reuseKey, when set, names the clusters that may take this one's
	// place under Reuse (reuse.go); empty: never kept.
	reuseKey string
}

// Start runs the nodes (DefaultNodes unless WithNodes) and returns once each
// answers PING through its proxy. Everything it creates is removed in
// tb.Cleanup, also when Start fails, unless Reuse keeps it for another test;
// under Reuse, Start may return such a cluster, reset. It fails tb on error,
// and skips it when it falls back to processes and redis-server is not
// installed (outside CI).
//
// The backend is chosen by WithBackend, else by REDLOCK_IT_BACKEND, else
// containers when a Docker engine answers and local processes otherwise; a
// requested containers backend without an engine fails tb.
func Start(tb testing.TB, opts ...Option) *Cluster {
	tb.Helper()
	cfg, err := newConfig(opts)
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{tb: tb, backend: chooseBackend(tb, cfg.backend)}
	key, reusable := cfg.reuseKey(c.backend)
	if reusable {
		if k := takeKept(tb, key); k != nil {
			return k
		}
	}
	tb.Cleanup(c.release) // before anything exists, so that a failed Start cleans up too

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	switch c.backend {
	case Containers:
		be, err := newContainerBackend(ctx, tb, cfg.image, cfg.fakeClocks)
		if err != nil {
			tb.Fatalf("cluster: %v", err)
		}
		c.be = be
	case Processes:
		c.be = &processBackend{tb: tb, fakeClocks: cfg.fakeClocks}
	}
	ps := make([]Persistence, cfg.nodes)
	for i := range ps {
		ps[i] = cfg.persistenceOf(i)
	}
	servers, err := c.be.startServers(ctx, ps)
	if err != nil {
		tb.Fatalf("cluster: start %d %s nodes: %v", cfg.nodes, c.backend, err)
	}
	srv := newProxyServer()
	for i, s := range servers {
		px, err := newProxy(srv, fmt.Sprintf("node%d", i), s.addr())
		if err != nil {
			tb.Fatalf("cluster: %v", err)
		}
		c.nodes = append(c.nodes, newNode(i, ps[i], s, px))
	}
	c.pools = c.newPools()
	for _, n := range c.nodes {
		if err := pingVia(ctx, n.Addr()); err != nil {
			tb.Fatalf("cluster: %v not answering through its proxy: %v", n, err)
		}
		if err := n.MarkFresh(ctx); err != nil {
			tb.Fatalf("cluster: %v", err)
		}
		if reusable {
			if n.firstConfig, err = n.direct.ConfigGet(ctx, "*").Result(); err != nil {
				tb.Fatalf("cluster: %v: config: %v", n, err)
			}
		}
	}
	c.reuseKey = key // only a cluster that started whole is kept
	return c
}

// pingVia sends one PING to addr on a connection of its own.
func pingVia(ctx context.Context, addr string) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DisableIdentity: true})
	defer rc.Close()
	return rc.Ping(ctx).Err()
}

// Backend returns where the nodes run.
func (c *Cluster) Backend() Backend { return c.backend }

// Len returns the number of nodes.
func (c *Cluster) Len() int { return len(c.nodes) }

// Node returns node i; it panics when i is out of range, like an index.
func (c *Cluster) Node(i int) *Node { return c.nodes[i] }

// Nodes returns every node, in order.
func (c *Cluster) Nodes() []*Node { return append([]*Node(nil), c.nodes...) }

// Pools returns one pool.Pool per node, in node order, each reaching its
// node through the node's proxy. The Cluster owns and closes them; they may
// be shared by any number of clients.
func (c *Cluster) Pools() []pool.Pool { return append([]pool.Pool(nil), c.pools...) }

// NewPools returns a fresh set of pools, one per node with its own
// connections, closed when tb ends: for clients that must not share
// connections (competing clients, benchmarks).
func (c *Cluster) NewPools(tb testing.TB) []pool.Pool {
	tb.Helper()
	ps := c.newPools()
	tb.Cleanup(func() {
		for _, p := range ps {
			_ = p.Close()
		}
	})
	return ps
}

// NewClient returns a redlock.Client over NewPools(tb), closed (before its
// pools) when tb ends. It fails tb when redlock.New refuses the options.
func (c *Cluster) NewClient(tb testing.TB, opts ...redlock.Option) *redlock.Client {
	tb.Helper()
	cl, err := redlock.New(c.NewPools(tb), opts...)
	if err != nil {
		tb.Fatalf("cluster: %v", err)
	}
	tb.Cleanup(func() { _ = cl.Close() })
	return cl
}

func (c *Cluster) newPools() []pool.Pool {
	urls := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		urls[i] = n.URL()
	}
	ps, err := pool.FromURLs(urls)
	if err != nil {
		// The URLs are ours, valid, and each names its own proxy.
		panic(fmt.Sprintf("cluster: pools: %v", err))
	}
	return ps
}

// Reset brings every node back to health: unpaused, started if killed, and
// free of network faults. Data is left as the nodes hold it. Meant for a
// benchmark or nemesis between rounds.
func (c *Cluster) Reset(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		errs = append(errs, n.Unpause(ctx), n.Start(ctx), n.Heal())
	}
	return errors.Join(errs...)
}

// FlushAll deletes every key on every node that is running and not paused,
// directly; the others are left alone. A node's fresh-start declaration
// (MarkFresh) is kept: it is about the node's run, which a flush does not
// change, and without it the lock client's restart quarantine would refuse
// the node.
func (c *Cluster) FlushAll(ctx context.Context) error {
	var errs []error
	for _, n := range c.nodes {
		n.mu.Lock()
		down := n.killed || n.paused
		n.mu.Unlock()
		if down {
			continue
		}
		if err := n.flushAll(ctx); err != nil {
			errs = append(errs, n.errorf("flushall", err))
		}
	}
	return errors.Join(errs...)
}

// flushAll deletes every key on n but its fresh-start declaration.
func (n *Node) flushAll(ctx context.Context) error {
	fresh, err := n.direct.Get(ctx, pool.FreshStartKey).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	if err := n.direct.FlushAll(ctx).Err(); err != nil {
		return err
	}
	if fresh == "" {
		return nil
	}
	return n.direct.Set(ctx, pool.FreshStartKey, fresh, 0).Err()
}

// remove removes everything Start created, in reverse order: the pools, the
// proxies and direct clients, then the servers.
func (c *Cluster) remove() error {
	for _, p := range c.pools {
		_ = p.Close()
	}
	for _, n := range c.nodes {
		_ = n.close()
	}
	if c.be == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	return c.be.close(ctx)
}
