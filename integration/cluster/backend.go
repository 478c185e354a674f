package cluster

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
)

// server is one Redis node as a backend runs it.
type server interface {
	// addr is where the node listens now (host:port). It may change when
	// the node starts again; the node's proxy hides that from clients.
	addr() string
	// kill stops the node at once (SIGKILL), without saving anything.
	kill(ctx context.Context) error
	// start runs a killed node again with its data directory, and waits
	// until it answers PING.
	start(ctx context.Context) error
	// pause freezes the node: connections stay open, nothing is answered.
	pause(ctx context.Context) error
	unpause(ctx context.Context) error
	// setClock moves the node's wall clock (see Node.SetClock); errFakeClock
	// without WithFakeClocks.
	setClock(offset time.Duration, rate float64) error
}

// backend runs the servers of one Cluster.
type backend interface {
	// startServers starts one server per persistence mode. It is called from
	// the test's goroutine; on error the servers already started are still
	// removed by close.
	startServers(ctx context.Context, ps []Persistence) ([]server, error)
	// close removes every server the backend started.
	close(ctx context.Context) error
}

// chooseBackend resolves the backend: the option, else EnvBackend, else
// containers when a Docker engine answers. A requested containers backend
// without an engine fails the test rather than skipping it.
func chooseBackend(tb testing.TB, requested Backend) Backend {
	tb.Helper()
	if requested == "" {
		switch env := os.Getenv(EnvBackend); env {
		case "", "auto":
		case string(Containers), string(Processes):
			requested = Backend(env)
		default:
			tb.Fatalf("cluster: %s=%q: want %q, %q or empty", EnvBackend, env, Containers, Processes)
		}
	}
	switch requested {
	case Processes:
		return Processes
	case Containers:
		if err := dockerEngine(); err != nil {
			tb.Fatalf("cluster: the containers backend was requested but no Docker engine answers: %v", err)
		}
		return Containers
	}
	if err := dockerEngine(); err != nil {
		tb.Logf("cluster: no Docker engine answers (%v); running local redis-server processes", err)
		return Processes
	}
	return Containers
}

var engine struct {
	once sync.Once
	err  error
}

// dockerEngine reports whether a Docker engine answers, asking once per
// process.
func dockerEngine() error {
	engine.once.Do(func() {
		disableReaper()
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(tclog.NewNoopLogger()))
		if err != nil {
			engine.err = err
			return
		}
		defer p.Close()
		if err := p.Health(ctx); err != nil {
			engine.err = fmt.Errorf("ping: %w", err)
		}
	})
	return engine.err
}

// disableReaper turns off testcontainers' reaper (Ryuk) before
// testcontainers reads its configuration, which it does once per process.
// The reaper is an image pulled from a registry, which the engines this
// suite runs on may not reach; the harness removes its containers itself.
// It also silences testcontainers' process-wide logger (a banner on first
// contact); each Cluster logs through its test instead.
func disableReaper() {
	reaperOnce.Do(func() {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
		tclog.SetDefault(tclog.NewNoopLogger())
	})
}

var reaperOnce sync.Once
