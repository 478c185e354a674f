// Package redlock is a distributed lock over N independent Redis masters that
// stays correct while a minority of them fail: the Redlock algorithm.
//
// A lock is taken by sending SET key token NX PX ttl to every node in
// parallel, each call bounded by a short per-node timeout. The lock is held
// when a majority (N/2+1) said yes and some validity is left:
//
//	validity = ttl - elapsed - (ttl*driftFactor + 2ms)
//
// measured on the monotonic clock from before the first request. The call
// returns as soon as the majority has decided, so a slow or dead node never
// slows it. A failed attempt releases the lock on every node where it may
// have landed, including nodes that timed out. Release and extension are
// compare-and-act Lua scripts: they touch the key only while it holds this
// lock's random token, so a failure never releases or overwrites another
// owner's lock.
//
// The simple way is Do: it takes the lock, keeps it alive while fn runs,
// cancels fn's context (with the reason, from context.Cause) before the
// lock's validity ends if the lock is lost, and releases it when fn returns:
//
//	pools := []pool.Pool{p1, p2, p3, p4, p5} // pool.FromURL("redis://host:6379")
//	c, err := redlock.New(pools)
//	...
//	defer c.Shutdown(context.Background()) // on exit: releases what is still held
//	err = c.Do(ctx, "orders:42", 10*time.Second, func(ctx context.Context) error {
//		return process(ctx) // stop when ctx is done
//	})
//	// errors.Is(err, redlock.ErrNotObtained): not obtained before ctx ended
//
// TryDo is Do with one attempt, for work that one replica of many should
// run: the others are refused at once. IsContended and IsUnavailable tell
// a key held elsewhere from too few working nodes. Lead is Do for an
// election: it campaigns, runs fn as the leader and resigns.
//
// Lock and TryLock hand out the Lock itself, for work that does not fit in
// a function:
//
//	l, err := c.Lock(ctx, "orders:42", 10*time.Second) // waits; TryLock does not
//	if err != nil {
//		return err
//	}
//	defer l.Unlock(ctx)
//	// work until l.Until(), or extend with l.Extend, or take it
//	// WithAutoExtend and watch l.Done()
//
// Status tells whether a key is locked, and Shutdown releases every lock a
// Client holds when the process stops.
// WithClock is the one name here meant for tests rather than for use: it
// hands the Client a clock.Fake.
//
// The guarantees hold under stated assumptions: bounded clock drift between
// this process and the nodes, nodes that persist with appendfsync always or
// stay down longer than the longest TTL after a crash, maxmemory-policy
// noeviction, and independent masters (no replicas in the set). See
// docs/safety.md in the repository.
//
// A node may be a Redis Cluster (a Pool that implements pool.Cluster, such
// as pool.FromURL("redis+cluster://...")), which counts as one node: a
// lock's companion keys are named in the key's hash slot on every kind of
// node (see docs/design.md, "Key names").
package redlock
