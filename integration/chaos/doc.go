// Package chaos checks the lock's safety under faults: clients take locks
// on a few keys and update shared counters under them while a nemesis
// crashes, restarts, pauses, partitions and slows the lock nodes and makes
// their clocks run fast or jump; a checker then looks for two holds of a
// key that overlap, updates that were lost, and fences that did not rise.
//
// Every kind of the family is exercised, each a workload of its own: locks
// (with hot keys contended by blocking Lock calls across Clients),
// multi-locks, read/write locks, permits and the election; a majority
// amnesia round restarts a majority of the nodes empty while holds are
// live. Run drives one run on five nodes (integration/cluster); Check
// judges a History, and is what the unit tests feed synthetic histories.
//
// The safe schedule stays within the model's assumptions and must find
// nothing; the unsafe schedule breaks them on purpose and must find
// violations in every workload, or the checker is broken. TestChaos is the
// entry point (`make chaos`, `make chaos-unsafe` in integration/,
// configured by environment variables: see chaos_test.go) and ends with one
// summary line. docs/safety.md, "The chaos checker", explains the schedule,
// the assumptions and the results.
package chaos
