package redistest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/redistest"
)

// TestStartCLIClusters checks what StartCLIClusters hands back: masters in
// slot order whose MasterOf agrees with where the cluster routes each key,
// a replica in sync with each, and no fresh-start declaration anywhere.
func TestStartCLIClusters(t *testing.T) {
	c := redistest.StartCLIClusters(t, 1, 3, 1, redistest.AOFAlways)[0]
	if len(c.Masters) != 3 || len(c.Replicas) != 3 {
		t.Fatalf("%d masters and %d replicas, want 3 and 3", len(c.Masters), len(c.Replicas))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cc := c.Client(t)
	for i := range 200 {
		key := fmt.Sprintf("k:%d", i)
		m, err := cc.MasterForKey(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := c.MasterOf(key).Addr(), m.Options().Addr; got != want {
			t.Fatalf("MasterOf(%q) = %s, the cluster routes it to %s", key, got, want)
		}
	}
	for j, r := range c.Replicas {
		info, err := r.Client(t).Info(ctx, "replication").Result()
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("master_port:%d", c.Masters[j].Port); !strings.Contains(info, want) ||
			!strings.Contains(info, "master_link_status:up") {
			t.Fatalf("replica %d (%s) does not replicate master %s in sync:\n%s", j, r.Addr(), c.Masters[j].Addr(), info)
		}
	}
	for _, m := range c.Masters {
		rc := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
		keys, err := rc.Keys(ctx, "redlock:*").Result()
		_ = rc.Close()
		if err != nil || len(keys) > 0 {
			t.Fatalf("master %s: keys %v (%v), want none", m.Addr(), keys, err)
		}
	}
}

// TestAwaitMeshWaitsForEveryNodesSlotView: a node that does not see every
// slot served keeps AwaitMesh waiting, and its error names that node and
// what it sees, though every node knows every other as connected.
func TestAwaitMeshWaitsForEveryNodesSlotView(t *testing.T) {
	c := redistest.StartCluster(t, 3, redistest.NoPersistence)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := redistest.AwaitMesh(ctx, c.Addrs()); err != nil {
		t.Fatalf("a whole cluster: %v", err)
	}
	m := c.Masters[1]
	rc := redis.NewClient(&redis.Options{Addr: m.Addr(), MaxRetries: -1})
	defer rc.Close()
	slot := 16384 / 3 // its first slot (StartCluster splits them evenly, in order)
	if err := rc.ClusterDelSlots(ctx, slot).Err(); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), time.Second)
	defer cancelShort()
	err := redistest.AwaitMesh(short, c.Addrs())
	if err == nil || !strings.Contains(err.Error(), m.Addr()+" does not see every slot served") ||
		!strings.Contains(err.Error(), "cluster_slots_assigned:16383") {
		t.Fatalf("AwaitMesh with slot %d unassigned on %s: %v, want its error naming that node and 16383 slots", slot, m.Addr(), err)
	}
}
