package redlock

import (
	"slices"

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

// names gives the companion keys of a lock key on one kind of node: on a
// standalone node the names built from the key (key+":fence", key+":queue",
// ...), which earlier versions used and which stay as they are; on a node
// that is a Redis Cluster, names in the key's hash slot (keyslot.Companion),
// so that every script on a key runs on the one shard that owns it. For a
// key with a hash tag the two agree. Every script's KEYS are named here.
type names struct{ cluster bool }

// names returns the naming of node i.
func (c *Client) names(i int) names { return names{cluster: c.cluster[i]} }

// kinds returns the namings of c's nodes, each once.
func (c *Client) kinds() []names {
	var out []names
	for i := range c.pools {
		if n := c.names(i); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// fence returns the name of key's fence counter.
func (n names) fence(key string) string {
	if n.cluster {
		return clusterFenceKey(key)
	}
	return fenceKey(key)
}

// queue returns the KEYS of Enqueue and Release for key: the key, its
// queue, the queue's leases, entries and departed waiters.
func (n names) queue(key string) []string {
	if n.cluster {
		return scripts.ClusterKeys(key)
	}
	return scripts.Keys(key)
}

// readers returns the name of the zset of key's readers (rlock_*.lua).
func (n names) readers(key string) string {
	if n.cluster {
		return scripts.ClusterReadersKey(key)
	}
	return scripts.ReadersKey(key)
}

// held returns the name of key's holder marker under a lock-delay.
func (n names) held(key string) string {
	if n.cluster {
		return scripts.ClusterHeldKey(key)
	}
	return scripts.HeldKey(key)
}

// watch returns the name of key's watch set (watch.go).
func (n names) watch(key string) string {
	if n.cluster {
		return scripts.ClusterWatchKey(key)
	}
	return scripts.WatchKey(key)
}

// fenceKey returns the name of key's fence counter on node i.
func (c *Client) fenceKey(i int, key string) string { return c.names(i).fence(key) }

// heldKey returns the name of key's holder marker on node i.
func (c *Client) heldKey(i int, key string) string { return c.names(i).held(key) }

// watchKeys returns the names of keys' watch sets on node i.
func (c *Client) watchKeys(i int, keys []string) []string {
	n := c.names(i)
	out := make([]string, len(keys))
	for j, k := range keys {
		out[j] = n.watch(k)
	}
	return out
}

// queueKeysAll returns the KEYS of ReleaseAll for the lock keys on node i:
// each key's queue keys (names.queue), in order.
func (c *Client) queueKeysAll(i int, keys []string) []string {
	n := c.names(i)
	out := make([]string, 0, 6*len(keys))
	for _, k := range keys {
		out = append(out, n.queue(k)...)
		if c.cfg.lockDelay > 0 {
			out = append(out, n.held(k)) // release_all.lua: a sixth key per group
		}
	}
	return out
}

// releaseKeys returns the KEYS of Enqueue and Release for key on each node,
// with its holder marker under a lock-delay: built once per call, shared by
// the nodes of one kind.
func (c *Client) releaseKeys(key string) [][]string {
	out := make([][]string, len(c.pools))
	var byKind [2][]string // standalone, cluster
	for i := range out {
		k := 0
		if c.cluster[i] {
			k = 1
		}
		if byKind[k] == nil {
			byKind[k] = c.withHeld(c.names(i).queue(key), i, key)
		}
		out[i] = byKind[k]
	}
	return out
}
