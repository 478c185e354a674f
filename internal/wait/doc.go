// Package wait is how the blocking calls wait for a key, below the redlock
// package's public API and above the engine.
//
// Lock waits in the nodes' FIFO queues (enqueue.lua, release.lua): the
// Waiter is a state machine over them, its rounds paced by the caller's
// retry strategy and heartbeats, the grants a release hands it counted
// until a majority, and a deaf timer catches grants announced before its
// Client listened. It honours the retry strategy exactly: a heartbeat round
// is not a retry, and it gives up only once its last retry's round has
// answered. It reaches the nodes only through the small Nodes interface
// (Round, GiveBack, Listening); Hub.Wait drives it for a Lock call, which
// it reaches through Queue (Nodes, and what the call makes of the grants).
//
// The calls that do not queue (RLock, AcquirePermit, LockAll, an owner's
// Lock) retry on the strategy and are woken by a release of their keys
// (Hub.Retry, watch.go); they reach the engine only through the Attempt
// function they give it.
//
// A Client's waiting calls share a Hub: the listeners that hear grants and
// wake-ups on each node (Grants, through each pool's pool.Notifier), the
// calls to wake when a key is released (Releases) and the keys its Lock
// calls recently found held (Contended). Nothing here imports the redlock
// package, so its logic is tested with fakes under testing/synctest:
//
//	var h wait.Hub
//	h.Init(wait.HubConfig{Channel: ch, Notifiers: ns, Health: judge, Timeout: timeout, Clock: clk, Closing: closing})
//	w := wait.New(nodes, wait.Config{Clock: clk, N: 5, Quorum: 3, Token: token, TTL: ttl, Drift: drift, Retry: retry, Check: grace})
//	err := h.Wait(ctx, w, key, queue, delay, retry) // queue.Round answers with w.Reply, a release reaches w.Deliver
//	n, err := h.Retry(ctx, keys, retry, timeout, beat, attempt) // attempt is the engine's, with a Watch to register
package wait
