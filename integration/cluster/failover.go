package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/redistest"
)

// A failover of a shard with a replica (WithReplicas), in two steps, as
// the failover chaos round plays it: CutReplica before the locks are
// taken, so that the replica never receives them, then TakeOver while
// they are valid, so that the shard's new master lacks them. The old
// master becomes the new one's replica, so the shard can fail over again.

// CutReplica waits until the replica of shard on cluster node is in sync
// (a replica that was the master of the last failover resyncs first),
// freezes it (SIGSTOP, or the engine's pause) and closes its link from the
// master, so that it receives no write from now on. ResumeReplica undoes
// it; TakeOver promotes it.
func (r *RedisClusters) CutReplica(ctx context.Context, node, shard int) error {
	m, rep, err := r.pair(node, shard)
	if err != nil {
		return err
	}
	if err := redistest.AwaitReplicaLink(ctx, rep.addr()); err != nil {
		return fmt.Errorf("cluster %d shard %d: %w", node, shard, err)
	}
	if err := rep.pause(ctx); err != nil {
		return fmt.Errorf("cluster %d shard %d: pause the replica: %w", node, shard, err)
	}
	if err := command(ctx, m.addr(), "CLIENT", "KILL", "TYPE", "replica"); err != nil {
		return errors.Join(err, rep.unpause(ctx))
	}
	return nil
}

// ResumeReplica lets a replica cut by CutReplica run again: it resyncs
// from its master.
func (r *RedisClusters) ResumeReplica(ctx context.Context, node, shard int) error {
	_, rep, err := r.pair(node, shard)
	if err != nil {
		return err
	}
	return rep.unpause(ctx)
}

// TakeOver promotes the replica of shard on cluster node, cut by
// CutReplica, with its master frozen meanwhile (a forced failover:
// CLUSTER FAILOVER TAKEOVER, which asks no other node), resumes the old
// master, which learns of the new one and becomes its replica, and waits
// until the new master takes the shard's writes. From then on the shard's
// faults (KillShard, PauseShard, ...) play on the new master. The shard's
// keys written after the cut are gone from the cluster.
func (r *RedisClusters) TakeOver(ctx context.Context, node, shard int) error {
	m, rep, err := r.pair(node, shard)
	if err != nil {
		return err
	}
	if err := m.pause(ctx); err != nil {
		return fmt.Errorf("cluster %d shard %d: pause the master: %w", node, shard, err)
	}
	err = rep.unpause(ctx)
	if err == nil {
		err = command(ctx, rep.addr(), "CLUSTER", "FAILOVER", "TAKEOVER")
	}
	if err == nil {
		err = awaitRole(ctx, rep.addr(), "role:master")
	}
	if err = errors.Join(err, m.unpause(ctx)); err != nil {
		return fmt.Errorf("cluster %d shard %d: take over: %w", node, shard, err)
	}
	r.mu.Lock()
	r.shards[node][shard], r.replicas[node][shard] = rep, m
	r.mu.Unlock()
	return r.awaitWritable(ctx, node, shard, rep)
}

// pair returns the master and the replica of shard on cluster node.
func (r *RedisClusters) pair(node, shard int) (m, rep server, err error) {
	if m, err = r.master(node, shard); err != nil {
		return nil, nil, fmt.Errorf("cluster: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if rep = r.replicas[node][shard]; rep == nil {
		return nil, nil, fmt.Errorf("cluster: shard %d of cluster %d has no replica (WithReplicas)", shard, node)
	}
	return m, rep, nil
}

// awaitRole waits until INFO replication at addr contains role.
func awaitRole(ctx context.Context, addr, role string) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rc.Close()
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, role) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: no %s: %w (last: %v)", addr, role, ctx.Err(), err)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// command runs one command at addr with a client of its own.
func command(ctx context.Context, addr string, args ...any) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, ContextTimeoutEnabled: true})
	defer rc.Close()
	if err := rc.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("%v on %s: %w", args, addr, err)
	}
	return nil
}
