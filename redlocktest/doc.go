// Package redlocktest runs the real redlock API over in-process Redis nodes
// (miniredis servers behind in-memory pipes), for the unit tests of code
// that takes locks: no redis-server, no Docker, no network. New starts the
// nodes; Client returns a redlock.Client over them, with the library's
// defaults; Stop and Start take a node down and back with its data; Expire
// ends a key's holds as if their TTLs had run out; SetClock gives a node a
// clock that may drift or jump:
//
//	nodes := redlocktest.New(t, 3)
//	err := nodes.Client().Do(t.Context(), "report", 2*time.Second, func(ctx context.Context) error {
//		nodes.Expire("report") // the hold runs out under the job
//		return runReport(ctx)  // must return once ctx is done
//	})
//	// errors.Is(err, redlock.ErrLockLost)
//
// Everything is released at the cleanup of the testing.TB given to New; no
// goroutine is left. The nodes run every script of the lock, so waiters are
// woken by releases as on Redis. Under testing/synctest, call New and
// Client inside the bubble: keys then expire and locks extend on the
// bubble's clock, in no real time (Nodes or Clients made outside it do not
// work inside it).
package redlocktest
