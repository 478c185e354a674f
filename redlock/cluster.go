package redlock

import (
	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
)

// clusterFenceKey returns the Redis key of the fence counter of the lock key
// on a node that is a Redis Cluster (its Pool implements pool.Cluster and
// says so): a name in the key's hash slot, so that one script can set the
// key and read the counter. For a key with a hash tag, such as
// "{orders}:42", it is fenceKey's name; for a key without one, such as
// "orders:42", it is "fence{orders:42}". See docs/fencing.md.
func clusterFenceKey(key string) string { return keyslot.Companion(key, "fence") }

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
		return clusterFenceKey(key)
	}
	return fenceKey(key)
}

// releaseKeys returns the KEYS of Enqueue and Release for key on each node,
// with its holder marker under a lock-delay: built once per call, shared by
// the nodes of one kind.
func (c *Client) releaseKeys(key string) [][]string {
	out := make([][]string, len(c.pools))
	var plain, clustered []string
	for i := range out {
		switch {
		case !c.cluster[i]:
			if plain == nil {
				plain = c.withHeld(scripts.Keys(key), i, key)
			}
			out[i] = plain
		default:
			if clustered == nil {
				clustered = c.withHeld(scripts.ClusterKeys(key), i, key)
			}
			out[i] = clustered
		}
	}
	return out
}
