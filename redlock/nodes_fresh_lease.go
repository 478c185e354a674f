package redlock

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/pool"
)

// DeclareFresh's rule for leases: a standalone node that carries a live
// lease ceiling (scripts' ceiling.lua, redlock:ceiling) granted a lease that
// may still be valid. Every script that grants or extends a lease on a
// standalone node raises the ceiling in the same step, hand-offs to a
// waiter included, and a bare SET NX PX is sent only where the Client knows
// the ceiling covers it already (internal/lease, ceiling.go); the ceiling
// lives at least as long as each such lease. So one key per node tells
// whether any lease of any kind, today's or tomorrow's, may be valid,
// where a scan must recognise every kind's value. And it tells it of the
// leases the node's peers lost: a lock held on nodes 0-2 alone leaves no
// key on 3-4, but a lock attempt there, or another lock, leaves their
// ceiling; once 0-2 restart empty, the ceilings of 3-4 are the only
// evidence left that a lease granted then may still be valid. A live
// ceiling anywhere refuses the declaration of every node until it expires.
// A Redis Cluster's shard masters keep no ceiling, and are judged by the
// scan alone (libraryKeys). A server in cluster mode behind a plain URL
// whose ceiling's slot is another shard's keeps none either (ceiling.lua):
// reading it fails there, and the node is not declared.

// liveCeiling returns an error wrapping ErrNotFresh that names the ceiling
// and when it expires, when the standalone node behind do keeps a live
// one; nil when it keeps none.
func liveCeiling(do func(args ...string) (any, error)) error {
	reply, err := do("PTTL", keyspace.Ceiling)
	if err != nil {
		return fmt.Errorf("reading %s: %w", keyspace.Ceiling, err)
	}
	left, ok := reply.(int64)
	if !ok {
		return fmt.Errorf("reading %s: unexpected PTTL reply %v", keyspace.Ceiling, reply)
	}
	if left == -2 {
		return nil // none: every lease the node granted has expired
	}
	v, err := do("GET", keyspace.Ceiling)
	if err != nil {
		return fmt.Errorf("reading %s: %w", keyspace.Ceiling, err)
	}
	if v == nil {
		return nil // expired between the two reads
	}
	ttl := fmt.Sprint(v)
	if ms, err := strconv.ParseInt(ttl, 10, 64); err == nil {
		ttl = (time.Duration(ms) * time.Millisecond).String()
	}
	if left < 0 {
		return fmt.Errorf("%w: it carries %s (leases of up to %s) with no expiry, which the library never sets: find out who wrote it, and delete it only if no lock may be held",
			ErrNotFresh, keyspace.Ceiling, ttl)
	}
	d := time.Duration(left) * time.Millisecond
	return fmt.Errorf("%w: it carries a live %s (leases of up to %s): a lease it granted may still be valid, on it or on a node that restarted since; it expires in %s, at %s: retry after then",
		ErrNotFresh, keyspace.Ceiling, ttl, d.Round(time.Millisecond), time.Now().Add(d).Format(time.RFC3339))
}

// keyExpiry returns " (expires in D)" for a key with a TTL of D, "" for one
// with none or when the node does not say.
func keyExpiry(ctx context.Context, cmd pool.Commander, key string) string {
	cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
	defer cancel()
	reply, err := cmd.Do(cctx, "PTTL", key)
	if ms, ok := reply.(int64); err == nil && ok && ms > 0 {
		return fmt.Sprintf(" (expires in %s)", (time.Duration(ms) * time.Millisecond).Round(time.Millisecond))
	}
	return ""
}
