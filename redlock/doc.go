// Package redlock is a distributed lock over N independent Redis masters
// that stays correct while a minority of them fail (the Redlock algorithm):
// a lock is held when a majority of the nodes set the key within its
// validity, and release and extension touch a key only while it holds the
// lock's own token.
//
// Do takes the lock, keeps it alive while fn runs, cancels fn's context if
// the lock is lost, and releases it when fn returns:
//
//	c, err := redlock.New(pools) // pools from pool.FromURLs
//	...
//	defer c.Shutdown(context.Background()) // releases what is still held
//	err = c.Do(ctx, "orders:42", 10*time.Second, func(ctx context.Context) error {
//		return process(ctx) // stop when ctx is done
//	})
//
// Lock and TryLock return the *Lock itself. The guarantees hold under the
// assumptions of docs/safety.md: bounded clock drift, nodes that persist
// every write or sit out the restart quarantine, maxmemory-policy
// noeviction, and independent masters.
package redlock
