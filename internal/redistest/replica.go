package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// StartClusterNode runs a cluster-enabled redis-server that belongs to no
// cluster yet (a replica to be: Replicate), stopped when t ends; extra are
// more redis-server arguments.
func StartClusterNode(t testing.TB, p Persistence, extra ...string) *Server {
	t.Helper()
	s := &Server{Dir: t.TempDir(), Persistence: p, Extra: extra}
	s.startFresh(t, true)
	return s
}

// Replicate makes the cluster node replica, in no cluster yet, a replica of
// the master at master, introduced to the cluster through seed (any of its
// nodes), and waits until its link is up, or ctx ends. The integration
// harness adds its containers' replicas with it.
func Replicate(ctx context.Context, seed, master string, replica Master) error {
	meet := func() error {
		return do(ctx, seed, "CLUSTER", "MEET", "127.0.0.1", replica.Port, replica.BusPort)
	}
	if err := meet(); err != nil {
		return err
	}
	mc := redis.NewClient(&redis.Options{Addr: master, MaxRetries: -1})
	defer mc.Close()
	id, err := mc.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return err
	}
	rcl := redis.NewClient(&redis.Options{Addr: replica.Addr, MaxRetries: -1})
	defer rcl.Close()
	met := time.Now()
	var last error // the replica's last refusal
	for {
		err = rcl.Do(ctx, "CLUSTER", "REPLICATE", id).Err()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return fmt.Errorf("CLUSTER REPLICATE on %s: %w (its last answer: %v)", replica.Addr, ctx.Err(), last)
		}
		last = err
		// The replica does not know the master yet: gossip. Redis drops a
		// MEET whose handshake did not finish within the node timeout (1s
		// at least) and never sends it again, as when the new node is slow
		// to answer on a loaded machine (a 3-minute start of the chaos
		// suite's clusters ended here, in a make test beside a second run
		// of the redlock package). Another MEET, once a second, is
		// harmless while the first is still on its way.
		if time.Since(met) >= time.Second {
			if err := meet(); err != nil && ctx.Err() == nil {
				last = err
			}
			met = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	return AwaitReplicaLink(ctx, replica.Addr)
}

// AwaitReplicaLink returns once the replica at addr reports its link to its
// master up (master_link_status:up: in sync), or ctx's error.
func AwaitReplicaLink(ctx context.Context, addr string) error {
	rc := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rc.Close()
	for {
		info, err := rc.Info(ctx, "replication").Result()
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("replica %s not in sync: %w (%v)", addr, ctx.Err(), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
