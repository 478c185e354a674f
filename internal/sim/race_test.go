//go:build race

package sim

// raceOn: the race detector changes the schedule of goroutines that meet at
// one virtual instant, which a few seeds do not order (docs/simulation.md).
const raceOn = true
