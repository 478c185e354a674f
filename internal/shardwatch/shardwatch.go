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
	"github.com/redlockgo/redlock/internal/keyspace"
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
	// NodeID is the master's cluster node id, "-" when CLUSTER MYID is
	// refused.
	NodeID string
	// Promoted reports that the master took over from another during its
	// run (second_repl_offset is set): when, Redis does not say.
	Promoted bool
	// TookOver reports that the shard's marker knows of a takeover in the
	// master's history: this run's, or one before a restart of this node,
	// or one since the marker's writer, another node or the same node
	// under another config epoch, wrote it (see reign.lua).
	TookOver bool
	// Taken is how long ago, on the master's clock, the latest such
	// takeover was first seen: the takeover itself came earlier. Zero when
	// TookOver is false.
	Taken time.Duration
	// Uptime is the run's uptime, as INFO server says (whole seconds,
	// which may exceed the true uptime by up to a second).
	Uptime time.Duration
	// Seen is how long ago, on the master's clock, the shard's marker says
	// the reign was first seen current: zero at its first sight.
	Seen time.Duration
	// Fresh reports the shard's fresh-start declaration for this run.
	Fresh bool
	// Tag is the tag of the shard's marker and declaration keys (Tag,
	// FreshKey).
	Tag string

	role string // a reply from a server that is not a master: its role
}

// Read runs the reign script on the master that serves key's slot on p (a
// Pool of a Redis Cluster), bounded by ctx. keep is how long the shard's
// marker outlives its last read; a marker that expired only makes the next
// reader see the reign for the first time, and forget the takeovers it
// knew of (see Reign.Left).
func Read(ctx context.Context, p pool.Pool, key string, keep time.Duration) (Reign, error) {
	v, err := p.Eval(ctx, Script, []string{key}, max(keep, time.Second).Milliseconds())
	if err != nil {
		return Reign{}, err
	}
	r, err := parseReign(v)
	if err != nil && r.role != "" {
		err = fmt.Errorf("shardwatch: the node serving %q is a %s", key, r.role)
	}
	return r, err
}

// Look reads the reign of the master that master (a Pool connected to one
// server of a Redis Cluster, as pool.Masters gives it) reaches, and
// changes nothing: the shard's marker is read, not written, so a reign
// seen for the first time reads as first seen now (Seen zero).
func Look(ctx context.Context, master pool.Pool) (Reign, error) {
	v, err := master.Eval(ctx, Script, nil, time.Second.Milliseconds(), "look")
	if err != nil {
		return Reign{}, err
	}
	r, err := parseReign(v)
	if err != nil && r.role != "" {
		err = fmt.Errorf("shardwatch: %s is a %s", master.Addr(), r.role)
	}
	return r, err
}

// parseReign reads the script's reply. A reply from a server that is not
// a master is an error, with role set.
func parseReign(v any) (Reign, error) {
	arr, _ := v.([]any)
	if len(arr) < 10 {
		return Reign{}, fmt.Errorf("shardwatch: malformed reply %v", v)
	}
	role, _ := arr[0].(string)
	if role != "master" {
		return Reign{role: role}, errors.New("shardwatch: not a master")
	}
	r := Reign{Promoted: asInt(arr[2]) >= 0, Uptime: time.Duration(asInt(arr[4])) * time.Second,
		Seen: time.Duration(asInt(arr[5])) * time.Millisecond, Fresh: asInt(arr[6]) == 1, Tag: fmt.Sprint(arr[7])}
	if taken := asInt(arr[8]); taken >= 0 {
		r.TookOver, r.Taken = true, time.Duration(taken)*time.Millisecond
	}
	r.ReplID, _ = arr[1].(string)
	r.RunID, _ = arr[3].(string)
	r.NodeID, _ = arr[9].(string)
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

// takenAge returns a lower bound of how long ago the latest takeover in
// the master's history happened: its first sight, by this reign's marker
// or by an earlier one.
func (r Reign) takenAge() time.Duration {
	switch {
	case r.Promoted && r.TookOver:
		return min(r.Seen, r.Taken)
	case r.Promoted:
		return r.Seen
	}
	return r.Taken
}

// Left returns how long the reign stays out under quarantine q: zero when
// it counts. persists tells that the master's run persists every write
// (appendonly yes, appendfsync always, as CONFIG GET said on a connection
// to that run; false when unknown). Two hazards are timed apart:
//
//   - a takeover (Promoted, or TookOver from an earlier run): the new
//     master may lack keys the old one granted just before, valid up to q
//     after; counted from the takeover's first sight. Neither persistence
//     nor a fresh-start declaration spares it: the keys never reached the
//     master, so no disk of its holds them;
//   - a restart of a master that never took over during its run: it may
//     have lost the writes of its previous run, as a standalone node;
//     counted by its uptime (Age). Persistence of every write spares it, as
//     does the fresh-start declaration.
func (r Reign) Left(q time.Duration, persists bool) time.Duration {
	var left time.Duration
	if r.Promoted || r.TookOver {
		left = q - r.takenAge()
	}
	if !r.Promoted && !r.Fresh && !persists {
		left = max(left, q-r.Age())
	}
	return max(left, 0)
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
func FreshKey(tag string) string { return keyspace.ShardFreshStart(tag) }

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
