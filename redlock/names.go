package redlock

import (
	"fmt"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/node"
)

// checkKey refuses a caller's key that is empty, or that could name another
// object's key: a companion of another key (its fence counter, queue,
// readers, markers, leader record, in either naming), an election's lock key,
// or a marker of the library's (keyspace.Check, docs/design.md). Every
// acquisition checks its keys here, before any node is called.
func checkKey(key string) error {
	if err := keyspace.Check(key); err != nil {
		return fmt.Errorf("redlock: %w", err)
	}
	return nil
}

// asElection marks an acquisition as an election's (Campaign): its key is
// "election:" + name, built and checked by keyspace.Election.
func asElection() LockOption { return func(c *lockConfig) { c.election = true } }

// clusterFenceKey returns the Redis key of the fence counter of the lock key
// on a node that is a Redis Cluster (node.ClusterFenceKey). See
// docs/fencing.md.
func clusterFenceKey(key string) string { return node.ClusterFenceKey(key) }

// fenceKey returns the name of key's fence counter on node i.
func (c *Client) fenceKey(i int, key string) string { return c.nodes.Names(i).Fence(key) }

// heldKey returns the name of key's holder marker on node i.
func (c *Client) heldKey(i int, key string) string { return c.nodes.Names(i).Held(key) }

// watchKeys returns the names of keys' watch sets on node i.
func (c *Client) watchKeys(i int, keys []string) []string {
	n := c.nodes.Names(i)
	out := make([]string, len(keys))
	for j, k := range keys {
		out[j] = n.Watch(k)
	}
	return out
}

// queueKeysAll returns the KEYS of ReleaseAll for the lock keys on node i:
// each key's queue keys (Names.Queue), in order.
func (c *Client) queueKeysAll(i int, keys []string) []string {
	n := c.nodes.Names(i)
	out := make([]string, 0, 6*len(keys))
	for _, k := range keys {
		out = append(out, n.Queue(k)...)
		if c.cfg.lockDelay > 0 {
			out = append(out, n.Held(k)) // release_all.lua: a sixth key per group
		}
	}
	return out
}

// releaseKeys returns the KEYS of Enqueue and Release for key on each node,
// with its holder marker under a lock-delay: built once per call, shared by
// the nodes of one naming.
func (c *Client) releaseKeys(key string) [][]string {
	out := make([][]string, c.nodes.Len())
	for i := range out {
		if j := c.nodes.SameNames(i); j < i {
			out[i] = out[j]
			continue
		}
		out[i] = c.withHeld(c.nodes.Names(i).Queue(key), i, key)
	}
	return out
}
