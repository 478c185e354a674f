// Package chaos checks the lock's safety under faults: several clients take
// locks on a few keys and update shared counters under them while a nemesis
// crashes, restarts, pauses, partitions and slows the lock nodes and makes
// their clocks run fast or jump (libfaketime, cluster.WithFakeClocks); a checker
// then looks for two holds of the same key that overlap, updates that were
// lost, and fences that did not increase.
//
// Beside the ordinary clients, eight more Clients with one worker each (as
// eight processes would be) contend on two hot keys of their own with a
// blocking Lock (Config.HotClients, Config.HotKeys), so that hand-offs
// between Clients happen under the faults; the log reports each key's
// acquisitions, holders, contended acquisitions and peak of Lock calls at
// once, so that one can see the contention happened.
//
// Two more teams of four Clients each play the rest of the lock family on
// keys of their own: readers (RLock) and writers (Lock) on two read/write
// keys, where any writer overlapping another holder is a violation, and
// permits (AcquirePermit, limit 2) of one key, where more valid holders at
// an instant than the limit is one. The ordinary workers' multi-locks
// (LockAll) are the fourth workload. The fifth is the election
// (election.go): three Clients campaign on one election, lead a short
// while with a Proclaim or two, then resign or are killed (the Client
// closed without Resign), and two Observe streams record the terms; a
// leadership is a hold whose fence is its term, judged by the overlap rule
// of locks, and its terms must rise, as an observer's must
// (election_check.go). Each hold carries its Workload, and the report
// counts holds and violations per workload. In an amnesia round
// (amnesia.go) a majority of the nodes, none persisting, restarts empty
// while a holder keeps one claim of every workload, and its prober tries
// each workload against it: in the safe run (majority amnesia, the first
// round of every run and one in each cycle) the clients' restart
// quarantine must keep everyone out, in the unsafe run (the victim's
// rounds, quarantine off) the others get in, and that run passes only when
// every workload shows violations.
//
// Run drives one run on a cluster of five nodes (integration/cluster); Check
// judges a History, and is what the unit tests feed with synthetic histories.
// The safe schedule stays within what the model and the clients' protections
// allow (at most two nodes down at once, but for the majority-amnesia round;
// nodes without persistence restarted after the TTL, or at once under the
// restart quarantine, one or three at a time; a node clock that
// runs fast, which the clients' clock check catches before it drops a key;
// clock jumps only while a node is down and empty) and must find nothing; the unsafe schedule breaks the model on purpose (a majority
// restarted empty while a lock is held, a client that writes after a pause
// past its validity) and must find violations, or the checker is broken.
//
// TestChaos is the entry point: `make chaos` and `make chaos-unsafe` in
// integration/ run it, configured by environment variables (see
// chaos_test.go), and it ends with one summary line:
//
//	acquisitions=N faults=F violations=V lost_updates=L majority_amnesia_rounds=R | exclusive holds=H violations=V | multi ... | rw ... | permits ... | election leaderships=N violations=V
//
// docs/safety.md explains the schedule, the assumptions and the results.
package chaos
