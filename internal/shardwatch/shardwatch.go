// Package shardwatch tells whether the master of a Redis Cluster shard may
// lack locks it should hold: it was promoted from a replica (a failover,
// forced or after its master died) or restarted without its data, less
// than the quarantine ago. A replica promoted before it received a lock
// key is the classic hazard of Redis locks on replicated nodes (the
// reason Redisson deprecated its RedLock).
//
// The check is one script on the shard that serves a key's slot (Read),
// run after that shard said yes: the answer is then known to come from a
// reign (run and replication id) at least as old as the script says.
package shardwatch

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/pool"
)

//go:embed reign.lua
var reignSrc string

// Script is reign.lua (see its comment for the contract).
var Script = pool.NewScript(reignSrc)

// Reign is what a shard's master said of its reign.
type Reign struct {
	RunID  string
	ReplID string
	// Promoted reports that the master took over from another during its
	// run (second_repl_offset is set): when, Redis does not say.
	Promoted bool
	// Uptime is the run's uptime, as INFO server says (whole seconds,
	// which may exceed the true uptime by up to a second).
	Uptime time.Duration
	// Seen is how long ago, on the master's clock, the shard's marker says
	// the reign was first seen current: zero at its first sight.
	Seen time.Duration
	// Fresh reports the shard's fresh-start declaration for this run.
	Fresh bool
}

// Read runs the reign script on the master that serves key's slot on p (a
// Pool of a Redis Cluster), bounded by ctx. keep is how long the shard's
// marker outlives its last read; a marker that expired only makes the next
// reader see the reign for the first time.
func Read(ctx context.Context, p pool.Pool, key string, keep time.Duration) (Reign, error) {
	v, err := p.Eval(ctx, Script, []string{key}, max(keep, time.Second).Milliseconds())
	if err != nil {
		return Reign{}, err
	}
	arr, _ := v.([]any)
	if len(arr) < 7 {
		return Reign{}, fmt.Errorf("shardwatch: malformed reply %v", v)
	}
	role, _ := arr[0].(string)
	if role != "master" {
		return Reign{}, fmt.Errorf("shardwatch: the node serving %q is a %s", key, role)
	}
	r := Reign{Promoted: asInt(arr[2]) >= 0, Uptime: time.Duration(asInt(arr[4])) * time.Second,
		Seen: time.Duration(asInt(arr[5])) * time.Millisecond, Fresh: asInt(arr[6]) == 1}
	r.ReplID, _ = arr[1].(string)
	r.RunID, _ = arr[3].(string)
	if r.RunID == "" || r.ReplID == "" {
		return Reign{}, errors.New("shardwatch: INFO hides run_id or master_replid")
	}
	return r, nil
}

// Age returns a lower bound of how long the reign has lasted: the run's
// uptime less a second when the master never took over during its run,
// else how long ago its marker first saw it (a promotion's time is not
// told, so it is taken to be the first sight).
func (r Reign) Age() time.Duration {
	if !r.Promoted {
		return max(r.Uptime-time.Second, r.Seen, 0)
	}
	return r.Seen
}

// Left returns how long the reign stays out under quarantine q: zero when
// it counts. A fresh-start declaration spares a run that never took over;
// persistence spares nothing, since a promoted replica never had the key,
// and the script cannot read CONFIG to know it.
func (r Reign) Left(q time.Duration) time.Duration {
	if r.Fresh && !r.Promoted {
		return 0
	}
	return max(q-r.Age(), 0)
}

// Tag returns the tag n of the shard's marker and fresh-start keys for a
// master serving the slots lo..hi: the first n = 0, 1, ... whose slot is in
// the range (the script's search, for a master with one range).
func Tag(lo, hi int) string {
	for n := 0; ; n++ {
		s := strconv.Itoa(n)
		if slot := keyslot.Slot(s); slot >= lo && slot <= hi {
			return s
		}
	}
}

// FreshKey returns the fresh-start declaration key of the shard whose tag
// (Tag) is tag: set it to the master's run_id on a new shard master that
// never granted a lock, before clients use it.
func FreshKey(tag string) string { return "redlock:fresh-start{" + tag + "}" }

func asInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}
