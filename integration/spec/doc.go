// Package spec proves the Redlock algorithm's behaviours on real Redis
// nodes: five independent masters run by integration/cluster, with nodes
// killed, paused, restarted, partitioned, slowed and blackholed. Each test
// is one scenario of the algorithm as docs and notes state it; the package
// has no code outside its tests.
package spec
