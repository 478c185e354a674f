// Package wait is how the blocking calls wait for a key, below the redlock
// package's public API and above the engine.
//
// Lock waits in the nodes' FIFO queues: a Waiter is the state machine of
// one such call, paced by the caller's retry strategy (a heartbeat round
// is not a retry), counting the grants a release hands it until a
// majority. It reaches the nodes only through the Nodes interface; Hub.Wait
// drives it. The calls that do not queue (RLock, AcquirePermit, LockAll, an
// owner's Lock) retry on the strategy and are woken by a release of their
// keys (Hub.Retry), reaching the engine only through the Attempt they give.
//
// A Client's waiting calls share a Hub: the listeners that hear grants and
// wake-ups on each node (Grants), the calls to wake when a key is released
// (Releases) and the keys its Lock calls recently found held (Contended).
// Nothing here imports the redlock package, so its logic is tested with
// fakes under testing/synctest:
//
//	w := wait.New(nodes, wait.Config{Clock: clk, N: 5, Quorum: 3, Token: token, TTL: ttl, Drift: drift, Retry: retry, Check: grace})
//	err := h.Wait(ctx, w, key, queue, delay, retry) // queue.Round answers with w.Reply, a release reaches w.Deliver
package wait
