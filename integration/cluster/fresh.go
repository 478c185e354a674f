package cluster

import (
	"context"
	"errors"
	"strings"

	"github.com/redlockgo/redlock/pool"
)

// MarkFresh declares that the node's current run holds no lock an earlier
// run granted: it sets pool.FreshStartKey to the run's run_id, which the
// lock client's restart quarantine honours (redlock.WithQuarantine). Start
// marks every node, since a new cluster has never granted a lock; Restart
// does not, so a restarted node without persistence is quarantined.
func (n *Node) MarkFresh(ctx context.Context) error {
	info, err := n.direct.Info(ctx, "server").Result()
	if err != nil {
		return n.errorf("mark fresh", err)
	}
	for line := range strings.Lines(info) {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
			if err := n.direct.Set(ctx, pool.FreshStartKey, id, 0).Err(); err != nil {
				return n.errorf("mark fresh", err)
			}
			return nil
		}
	}
	return n.errorf("mark fresh", errors.New("INFO server has no run_id"))
}
