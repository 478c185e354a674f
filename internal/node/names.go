package node

import "github.com/redlockgo/redlock/internal/keyspace"

// Names gives the companion keys of a lock key on one node (keyspace.Naming). A
// node's Names is chosen once, when the Set is built, from what its Pool says
// it is (pool.Cluster): Standalone, or Cluster for a node that is a Redis
// Cluster. Every script's KEYS are named through a Names.
type Names = keyspace.Naming

// Standalone is the naming of a standalone node (keyspace.Standalone).
type Standalone = keyspace.Standalone

// Cluster is the naming of a node that is a Redis Cluster (keyspace.Cluster).
type Cluster = keyspace.Cluster

// FenceKey returns the fence counter's name on a standalone node.
func FenceKey(key string) string { return keyspace.Standalone{}.Fence(key) }

// ClusterFenceKey returns the fence counter's name on a Redis Cluster node:
// FenceKey's name, which is under the reserved prefix "redlock:" and in the
// key's hash slot on every kind of node.
func ClusterFenceKey(key string) string { return keyspace.Cluster{}.Fence(key) }
