// Package wait is how a Lock call waits for a key: the Waiter, a state
// machine over the nodes' FIFO queues (enqueue.lua, release.lua), its
// rounds paced by the caller's retry strategy and heartbeats, the grants a
// release hands it, and the deaf timer that catches grants announced
// before its Client listened. It honours the retry strategy exactly: a
// heartbeat round is not a retry, and it gives up only once its last
// retry's round has answered.
//
// It sits below the redlock package's public API and above the engine,
// which it reaches only through the small Nodes interface (Round,
// GiveBack, Listening), so its logic is tested with fakes under
// testing/synctest:
//
//	w := wait.New(nodes, wait.Config{Clock: clk, N: 5, Quorum: 3, Token: token, TTL: ttl, Drift: drift, Retry: retry, Check: grace})
//	until, err := w.Wait(ctx, closing, delay, retry) // nodes.Round answers with w.Reply, a release with w.Deliver
package wait
