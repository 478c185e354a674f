// Package redlocktest runs the real redlock API over in-process Redis nodes,
// for the unit tests of code that takes locks: no redis-server, no Docker,
// no network (each connection is an in-memory pipe to a miniredis server).
//
// New starts the nodes; Client returns a redlock.Client over them; Stop,
// Start and Expire inject the faults a lock holder must survive: a node that
// goes down and comes back with its data, and a hold that runs out under its
// holder (a GC pause, a partition):
//
//	func TestReportStopsWhenLockLost(t *testing.T) {
//		nodes := redlocktest.New(t, 3)
//		c := nodes.Client()
//		err := c.Do(t.Context(), "report", 2*time.Second, func(ctx context.Context) error {
//			nodes.Expire("report")  // the hold runs out under the job
//			return runReport(ctx) // must return once ctx is done
//		})
//		if !errors.Is(err, redlock.ErrLockLost) {
//			t.Fatalf("report did not notice it lost the lock: %v", err)
//		}
//	}
//
// Everything is released at the cleanup of the testing.TB given to New:
// Clients are closed, then connections and nodes; no goroutine is left.
//
// # Nodes
//
// Each node is a miniredis server (github.com/alicebob/miniredis/v2) that
// runs every script of the lock (TIME, the queue, pub/sub grants), so a
// waiter in Lock, RLock, AcquirePermit or LockAll is woken by a release as
// on Redis, not by its retry. Keys expire as the clock
// moves (time.Now, or the bubble's clock under testing/synctest), consistent
// with the TIME the scripts read. A node is standalone, not a Redis Cluster,
// and a key's companion keys (fence counter, readers, queue...) have the
// names they have on every node, under the reserved prefix "redlock:".
//
// # Client defaults
//
// Nodes.Client gives the caller's options to redlock.New and nothing else:
// a kit Client has the library's defaults (the node timeout of a lock is
// its TTL/20, at most redlock.MaxNodeTimeout), so it accepts and refuses
// the same TTLs and options as a Client over real nodes. An in-memory call
// answers in microseconds; on the real clock a machine loaded far beyond
// its cores can still stall one past a short lock's node timeout, which
// the call reports as ErrNodeTimeout, as it would on Redis. Inside a
// testing/synctest bubble no node timeout passes while a node has work to
// do. A node restarted by Start keeps its
// data, as a node persisting every write does, and its Pool says so
// (pool.Identifier): the restart quarantine (redlock.WithQuarantine) lets
// it count at once, as it would such a node on Redis.
//
// # testing/synctest
//
// The nodes, the Clients and every lock kind work inside a synctest bubble
// when New and Client are called inside it, with the bubble's t:
//
//	synctest.Test(t, func(t *testing.T) {
//		nodes := redlocktest.New(t, 3)
//		c := nodes.Client()
//		l, _ := c.TryLock(ctx, "job", 2*time.Second, redlock.WithAutoExtend(0))
//		time.Sleep(time.Hour) // no real time: the lock is extended on the fake clock
//		...
//	})
//
// The pipes, the servers' goroutines and the Client's timers then belong to
// the bubble, a call in flight is durably blocked, keys expire on the
// bubble's clock and extensions follow it, so a test of a TTL, a lock-delay
// or an extension runs in no real time and no node timeout fires on a slow
// machine; synctest.Wait returns once every call in flight has landed (a
// lock call returns at the majority: see Stop). Cleanup runs before the
// bubble ends, so synctest.Test's check that every goroutine exited holds.
// Tried and not working: a Nodes made outside the bubble and used inside
// (its connections, opened in the bubble, are still open when the bubble
// ends, which synctest reports as a deadlock); a Client made outside and
// used inside (its goroutines block on channels from outside the bubble,
// so the fake clock never moves and a time.Sleep never returns); real
// Redis over TCP, or miniredis on a loopback listener (a goroutine reading
// a socket is not durably blocked: the clock never moves either).
//
// # Failures
//
// Bad input (New with n < 1, Stop or Start with an index out of range) and a
// Client that redlock.New refuses fail the test with t.Fatalf; like any
// Fatalf, call them from the test's goroutine. Stop, Start and Expire are
// safe for concurrent use otherwise.
package redlocktest
