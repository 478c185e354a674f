package redlock

import "github.com/redlockgo/redlock/internal/node"

// WaitIdle waits for the Client's background node calls (stragglers,
// cleanup) to end, so tests can inspect the nodes deterministically. It must
// not run concurrently with new operations.
func (c *Client) WaitIdle() { c.life.wg.Wait() }

// FenceKey and ClusterFenceKey name a key's fence counter on a standalone
// node and on a Redis Cluster node, for tests that look at the nodes.
var (
	FenceKey        = fenceKey
	ClusterFenceKey = node.ClusterFenceKey
)

// ShardedNodes starts c's listeners, as its first wait would, and returns
// how many of them found sharded pub/sub on their node so far.
func (c *Client) ShardedNodes() int {
	c.waits.Grants.Start()
	return c.waits.Grants.ShardedNodes()
}

// RecordTries is how many times Campaign writes the leader record under one
// won lock before it campaigns again.
const RecordTries = recordTries
