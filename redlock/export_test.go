package redlock

// WaitIdle waits for the Client's background node calls (stragglers,
// cleanup) to end, so tests can inspect the nodes deterministically. It must
// not run concurrently with new operations.
func (c *Client) WaitIdle() { c.wg.Wait() }

// FenceKey and ClusterFenceKey name a key's fence counter on a standalone
// node and on a Redis Cluster node, for tests that look at the nodes.
var (
	FenceKey        = fenceKey
	ClusterFenceKey = clusterFenceKey
)
