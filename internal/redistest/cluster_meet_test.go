package redistest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// TestMeetAgainIntroducesMastersThatDoNotKnowEachOther: two cluster nodes
// that were never introduced (as after a MEET Redis dropped) know each
// other after meetAgain, and a second meetAgain, once they do, leaves each
// knowing exactly the two.
func TestMeetAgainIntroducesMastersThatDoNotKnowEachOther(t *testing.T) {
	a, b := StartClusterNode(t, NoPersistence), StartClusterNode(t, NoPersistence)
	masters := []Master{{Addr: a.Addr(), Port: a.Port, BusPort: a.BusPort}, {Addr: b.Addr(), Port: b.Port, BusPort: b.BusPort}}
	known := func(m Master) (int, string) {
		rc := redis.NewClient(&redis.Options{Addr: m.Addr, MaxRetries: -1})
		defer rc.Close()
		nodes, err := rc.ClusterNodes(context.Background()).Result()
		if err != nil {
			return 0, err.Error()
		}
		n := 0
		for _, o := range masters {
			if strings.Contains(nodes, fmt.Sprintf(":%d@%d", o.Port, o.BusPort)) {
				n++
			}
		}
		return n, nodes
	}
	for _, m := range masters {
		if n, nodes := known(m); n != 1 {
			t.Fatalf("%s before meetAgain knows %d of the 2 nodes, want itself only:\n%s", m.Addr, n, nodes)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	meetAgain(ctx, masters)
	// A handshake takes a round trip on the cluster bus, and the gossip that
	// tells the other side a cron tick (100ms): 10s is room for a loaded
	// machine.
	for _, m := range masters {
		WaitFor(t, 10*time.Second, m.Addr+" knows both nodes", func() (bool, string) {
			n, nodes := known(m)
			return n == 2 && !strings.Contains(nodes, "handshake"), nodes
		})
	}
	meetAgain(ctx, masters)
	for _, m := range masters {
		rc := redis.NewClient(&redis.Options{Addr: m.Addr, MaxRetries: -1})
		info, err := rc.ClusterInfo(ctx).Result()
		_ = rc.Close()
		if err != nil || !strings.Contains(info, "cluster_known_nodes:2\r\n") {
			t.Fatalf("%s after a second meetAgain: %v\n%s, want 2 known nodes", m.Addr, err, info)
		}
	}
}
