package chaos

import (
	"context"
	"sync"
	"time"
)

// shardOut is one shard of one cluster: what a shard fault takes out of the
// clients' majorities.
type shardOut struct{ cluster, shard int }

// forever marks a shard out while its fault lasts: its end is set when the
// shard is back (shardRoom.back).
var forever = time.Unix(1<<62, 0)

// sightLag is added to a quarantine's end in the room: the clients count a
// shard's quarantine from their first call there after it came back.
const sightLag = time.Second

// shardRoom keeps the shard nemesis from taking a second cluster's copy of a
// shard out while one is out, counting as out the clients' quarantine after
// the shard comes back without its data (a killed master restarted empty,
// the new master of a failover). So the keys of every shard keep a majority
// of clusters that count, but during the failover round, which takes two of
// three out on purpose: that round's quarantine alone decides how long a
// workload may go without a lock (Result.Unexercised), as the majority
// amnesia round's does on standalone nodes (nemesis.awaitRoom).
type shardRoom struct {
	mu  sync.Mutex
	out map[shardOut]time.Time // until when; forever while the fault lasts
}

// take marks s out until its fault ends and reports whether there was room
// for it: no cluster has s.shard out (s itself included, whose fault would
// add nothing), nor does one of taken, the faults drawn with it.
func (r *shardRoom) take(s shardOut, taken []shardFault, now time.Time) bool {
	for _, f := range taken {
		if f.shard == s.shard {
			return false
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.clearLocked(s.shard, 0, now) {
		return false
	}
	r.setLocked(s, forever)
	return true
}

// hold marks s out until its fault ends, room or not: the failover round
// takes two clusters' copies of its shard out at once.
func (r *shardRoom) hold(s shardOut) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setLocked(s, forever)
}

// back marks s back at until: now for a shard that kept its data (a paused
// master), the end of the clients' quarantine for one that did not.
func (r *shardRoom) back(s shardOut, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setLocked(s, until)
}

// clearFor reports whether no cluster has had shard out for quiet at now.
func (r *shardRoom) clearFor(shard int, quiet time.Duration, now time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.clearLocked(shard, quiet, now)
}

func (r *shardRoom) clearLocked(shard int, quiet time.Duration, now time.Time) bool {
	for o, until := range r.out {
		if o.shard == shard && until.Add(quiet).After(now) {
			return false
		}
	}
	return true
}

func (r *shardRoom) setLocked(s shardOut, until time.Time) {
	if r.out == nil {
		r.out = make(map[shardOut]time.Time)
	}
	r.out[s] = until
}

// awaitClear waits, until ctx ends, for no cluster to have had shard out
// for quiet.
func (r *shardRoom) awaitClear(ctx context.Context, shard int, quiet time.Duration) {
	for ctx.Err() == nil && !r.clearFor(shard, quiet, time.Now()) {
		sleep(ctx, 50*time.Millisecond)
	}
}
