package redlock

import "github.com/redlockgo/redlock/pool"

// WaitIdle waits for the Client's background node calls (stragglers,
// cleanup) to end, so tests can inspect the nodes deterministically. It must
// not run concurrently with new operations.
func (c *Client) WaitIdle() { c.life.wg.Wait() }

// FenceKey and ClusterFenceKey name a key's fence counter on a standalone
// node and on a Redis Cluster node, for tests that look at the nodes.
var (
	FenceKey        = fenceKey
	ClusterFenceKey = clusterFenceKey
)

// ShardedNodes starts c's listeners, as its first wait would, and returns
// how many of them found sharded pub/sub on their node so far.
func (c *Client) ShardedNodes() int {
	c.waits.grants.start(c.nodes.Pools(), c.nodeTimeout(0))
	c.waits.grants.mu.Lock()
	defer c.waits.grants.mu.Unlock()
	n := 0
	for _, l := range c.waits.grants.byNode {
		if sl, ok := l.(pool.ShardedListener); ok && sl.Sharded() {
			n++
		}
	}
	return n
}
