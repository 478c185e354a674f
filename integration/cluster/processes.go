package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redlockgo/redlock/internal/redistest"
)

// processBackend runs local redis-server processes through redistest: the
// fallback for machines without a Docker engine. Pause is SIGSTOP.
type processBackend struct {
	tb         testing.TB
	fakeClocks bool
}

type processServer struct {
	tb   testing.TB
	s    *redistest.Server
	fake bool // under libfaketime
}

func (b *processBackend) startServers(_ context.Context, ps []Persistence) ([]server, error) {
	out := make([]server, len(ps))
	for i, p := range ps {
		// redistest.Start fails or skips tb itself (redis-server missing),
		// and kills the process when tb ends.
		if b.fakeClocks {
			out[i] = &processServer{tb: b.tb, s: redistest.StartWithFakeClock(b.tb, toRedistest(p)), fake: true}
			continue
		}
		out[i] = &processServer{tb: b.tb, s: redistest.Start(b.tb, toRedistest(p))}
	}
	return out, nil
}

func (b *processBackend) close(context.Context) error { return nil }

func toRedistest(p Persistence) redistest.Persistence {
	switch p {
	case AOFAlways:
		return redistest.AOFAlways
	case AOFEverySec:
		return redistest.AOFEverySec
	}
	return redistest.NoPersistence
}

func (s *processServer) addr() string { return s.s.Addr() }

func (s *processServer) kill(context.Context) error {
	s.s.Kill()
	return nil
}

// start runs the process again on the same port and data directory.
// redistest.Server.Restart reports failure through a testing.TB, which must
// not be stopped from a goroutine other than the test's (a nemesis may call
// this from anywhere): errorTB turns that report into an error.
func (s *processServer) start(context.Context) error {
	e := &errorTB{TB: s.tb}
	s.s.Restart(e)
	return e.err
}

func (s *processServer) setClock(offset time.Duration, rate float64) error {
	if !s.fake {
		return errFakeClock
	}
	return s.s.SetClock(offset, rate)
}

func (s *processServer) pause(context.Context) error {
	s.s.Pause()
	return nil
}

func (s *processServer) unpause(context.Context) error {
	s.s.Resume()
	return nil
}

// errorTB records Fatal and Skip as an error instead of ending the calling
// goroutine. The code it is handed returns right after those calls.
type errorTB struct {
	testing.TB
	err error
}

func (e *errorTB) Helper() {}

func (e *errorTB) Fatalf(format string, args ...any) {
	e.err = errors.Join(e.err, fmt.Errorf(format, args...))
}

func (e *errorTB) Fatal(args ...any) { e.err = errors.Join(e.err, errors.New(fmt.Sprint(args...))) }

func (e *errorTB) Skip(args ...any) { e.Fatal(args...) }

func (e *errorTB) Skipf(format string, args ...any) { e.Fatalf(format, args...) }
