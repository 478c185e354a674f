package node

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/pool"
)

// youngPool is a node whose run started a moment ago and persists nothing:
// the quarantine holds it, and every vote that finds it so probes its
// horizon. Its horizon reads fail, so that a probe ends at once.
type youngPool struct{ started time.Time }

func (p youngPool) Addr() string { return "fake:7001" }
func (p youngPool) Close() error { return nil }
func (p youngPool) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	return false, errors.New("youngPool: no SetNX")
}
func (p youngPool) Eval(context.Context, *pool.Script, []string, ...any) (any, error) {
	return nil, errors.New("youngPool: no scripts")
}
func (p youngPool) Identity() (pool.Identity, bool) {
	return pool.Identity{RunID: "young", Started: p.started, Persistence: pool.PersistencePartial}, true
}

// A vote that finds a node quarantined starts a horizon probe; the Set's
// Stop, racing with such votes (a Client closed while an attempt's calls
// are out), waits for every probe begun before it and lets none begin
// after. Under -race, a probe counted in the WaitGroup while Stop waits
// on it was reported as a data race (a WaitGroup's Add must happen before
// its Wait).
func TestStopRacingWithProbes(t *testing.T) {
	for range 50 {
		s := New([]pool.Pool{youngPool{time.Now()}}, Config{Quarantine: time.Hour, Timeout: time.Second,
			Clock: clock.Real{}, Report: func(context.Context, int, Report, error) {}})
		stop := make(chan struct{})
		s.Start(stop)
		var votes sync.WaitGroup
		for range 4 {
			votes.Go(func() {
				for range 20 {
					assert.ErrorIs(t, s.Health(context.Background(), 0, "k"), ErrQuarantined)
					s.horizon.mu.Lock()
					s.horizon.last[0] = time.Time{} // let the next vote probe again
					s.horizon.mu.Unlock()
				}
			})
		}
		close(stop)
		s.Stop()
		votes.Wait()
		s.horizon.mu.Lock()
		probing := s.horizon.probing[0]
		s.horizon.mu.Unlock()
		assert.False(t, probing, "a probe began after Stop")
	}
}
