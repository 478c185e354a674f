// Package random is the lock's source of non-cryptographic randomness: a
// retry's jitter, the delay before an attempt that settles a split, and
// the slot a permit tries first. By default it is math/rand/v2's global
// source. A deterministic simulation (internal/sim) replaces it with a
// seeded one for the length of a run, so that the delays the Client draws
// are a function of the run's seed; tokens come from crypto/rand, which
// testing/cryptotest.SetGlobalRandom seeds.
package random

import (
	"math/rand/v2"
	"sync"
)

var (
	mu     sync.Mutex
	seeded *rand.Rand // nil: math/rand/v2's global source
)

// N returns a random integer in [0, n), as math/rand/v2.N does; n must be
// positive (it panics otherwise, as rand.N does: every caller passes a
// bound it has checked).
func N[Int ~int | ~int64](n Int) Int {
	mu.Lock()
	defer mu.Unlock()
	if seeded == nil {
		return rand.N(n)
	}
	return Int(seeded.Int64N(int64(n)))
}

// Seed makes N draw from a source seeded with seed until restore is
// called, which brings back the default source. Only one seeded source
// exists per process: a caller that seeds must not run concurrently with
// another that does (the simulation runs its seeds one after another).
func Seed(seed uint64) (restore func()) {
	mu.Lock()
	defer mu.Unlock()
	seeded = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	return func() {
		mu.Lock()
		defer mu.Unlock()
		seeded = nil
	}
}
