package redlock

import (
	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
)

// ClusterFenceKey returns the Redis key of the fence counter of the lock key
// on a node that is a Redis Cluster (its Pool implements pool.Cluster and
// says so): a name in the key's hash slot, so that one script can set the
// key and read the counter. For a key with a hash tag, such as
// "{orders}:42", it is FenceKey's name; for a key without one, such as
// "orders:42", it is "fence{orders:42}". See docs/fencing.md.
func ClusterFenceKey(key string) string { return keyslot.Companion(key, "fence") }

// clusterNodes reports, for each pool, whether its node is a Redis Cluster.
func clusterNodes(pools []pool.Pool) []bool {
	cluster := make([]bool, len(pools))
	for i, p := range pools {
		if cp, ok := p.(pool.Cluster); ok {
			cluster[i] = cp.IsCluster()
		}
	}
	return cluster
}

// fenceKey returns the name of key's fence counter on node i.
func (c *Client) fenceKey(i int, key string) string {
	if c.cluster[i] {
		return ClusterFenceKey(key)
	}
	return FenceKey(key)
}

// queueKeys returns the KEYS of Enqueue and Release for key on node i.
func (c *Client) queueKeys(i int, key string) []string {
	if c.cluster[i] {
		return scripts.ClusterKeys(key)
	}
	return scripts.Keys(key)
}
