package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"testing"
)

// Reuse of container clusters across the tests of one binary. Starting a
// cluster of five containers and removing it takes about 3.5s on a
// two-core machine, much of it CPU that the tests' clients then miss, and
// most tests only need healthy nodes with keys of their own. A cluster
// that Reuse keeps is handed back when its test ends: every node healed,
// unpaused, started if killed, emptied (keys and scripts), checked against
// its first start's configuration and declared fresh again, since it then
// holds no lock. A test cannot tell it from a new one but by its nodes'
// uptime and addresses. Clusters with fake clocks and those of the
// processes backend are not kept; nor one whose reset failed (removed).

// kept is the binary's reuse state (Reuse).
var kept struct {
	mu   sync.Mutex
	on   bool
	idle map[string][]*Cluster // by reuseKey
}

// Reuse runs run (a TestMain's m.Run) with reuse of container clusters on,
// then removes the clusters kept idle and returns run's code, or 1 if run
// passed and a removal failed:
//
//	func TestMain(m *testing.M) { os.Exit(cluster.Reuse(m.Run)) }
//
// Without it, Start creates a cluster for every call and removes it when
// its test ends.
func Reuse(run func() int) int {
	kept.mu.Lock()
	kept.on, kept.idle = true, make(map[string][]*Cluster)
	kept.mu.Unlock()
	code := run()
	kept.mu.Lock()
	idle := kept.idle
	kept.on, kept.idle = false, nil
	kept.mu.Unlock()
	for _, cs := range idle {
		for _, c := range cs {
			if err := c.remove(); err != nil {
				fmt.Fprintf(os.Stderr, "cluster: cleanup of a kept cluster: %v\n", err)
				if code == 0 {
					code = 1
				}
			}
		}
	}
	return code
}

// reuseKey names the clusters of cfg that may serve each other's tests;
// ok is false when such a cluster is not kept.
func (c *config) reuseKey(b Backend) (key string, ok bool) {
	if b != Containers || c.fakeClocks {
		return "", false
	}
	ps := make([]Persistence, c.nodes)
	for i := range ps {
		ps[i] = c.persistenceOf(i)
	}
	return fmt.Sprint(c.image, ps), true
}

// takeKept returns an idle cluster kept under key, now tb's, or nil.
func takeKept(tb testing.TB, key string) *Cluster {
	kept.mu.Lock()
	defer kept.mu.Unlock()
	cs := kept.idle[key]
	if !kept.on || len(cs) == 0 {
		return nil
	}
	c := cs[len(cs)-1]
	kept.idle[key] = cs[:len(cs)-1]
	c.tb = tb
	tb.Cleanup(c.release)
	c.be.(*containerBackend).log.attach(tb) // after release: its Cleanup runs first
	return c
}

// release ends a test's use of c (its t.Cleanup): c is handed back for
// reuse when its key allows it and Reuse is on, else removed.
func (c *Cluster) release() {
	if c.reuseKey != "" && c.handBack() {
		return
	}
	if err := c.remove(); err != nil {
		c.tb.Errorf("cluster: cleanup: %v", err)
	}
}

// handBack resets c and keeps it idle; it reports false when c is not kept
// (Reuse off, or a step failed), which leaves it to be removed.
func (c *Cluster) handBack() bool {
	kept.mu.Lock()
	on := kept.on
	kept.mu.Unlock()
	if !on {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := c.reset(ctx); err != nil {
		c.tb.Logf("cluster: not kept for another test: %v", err)
		return false
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	if !kept.on {
		return false
	}
	kept.idle[c.reuseKey] = append(kept.idle[c.reuseKey], c)
	return true
}

// reset brings c back to a new cluster's state: every node healthy, empty
// and declared fresh, as at its first start, and new pools (the old ones'
// connections may have seen faults).
func (c *Cluster) reset(ctx context.Context) error {
	if err := c.Reset(ctx); err != nil {
		return err
	}
	for _, n := range c.nodes {
		if err := n.reset(ctx); err != nil {
			return n.errorf("reset", err)
		}
	}
	for _, p := range c.pools {
		_ = p.Close()
	}
	c.pools = c.newPools()
	return nil
}

// reset empties the running, healthy node n, checks that its configuration
// is its first start's, and declares its run fresh.
func (n *Node) reset(ctx context.Context) error {
	cfg, err := n.direct.ConfigGet(ctx, "*").Result()
	if err != nil {
		return err
	}
	if !maps.Equal(cfg, n.firstConfig) {
		return errors.New("configuration changed")
	}
	for _, step := range [][]any{{"FLUSHALL", "SYNC"}, {"SCRIPT", "FLUSH", "SYNC"}, {"FUNCTION", "FLUSH", "SYNC"}} {
		if err := n.direct.Do(ctx, step...).Err(); err != nil {
			return fmt.Errorf("%v: %w", step, err)
		}
	}
	return n.MarkFresh(ctx)
}
