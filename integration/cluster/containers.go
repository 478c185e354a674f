package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"golang.org/x/sync/errgroup"

	"github.com/redlockgo/redlock/internal/redistest"
)

// Label marks every container the harness creates; `make clean` removes
// the ones a killed test process left behind.
const Label = "org.redlockgo.integration"

const (
	redisPort    = "6379/tcp"
	readyTimeout = 60 * time.Second // a cold start on a loaded 2-core machine
)

// containerBackend runs one container per node. Containers stay on
// Docker's usual bridge network with their port published on 127.0.0.1; the
// published port changes when a container starts again, which the node's
// proxy hides. Kill and Start keep the container, so its /data (and the
// append-only file in it) survives.
type containerBackend struct {
	tb         testing.TB
	image      string
	fakeClocks bool
	provider   *testcontainers.DockerProvider
	log        *tbLogger

	mu   sync.Mutex
	ctrs []*testcontainers.DockerContainer
}

type containerServer struct {
	b     *containerBackend
	ctr   *testcontainers.DockerContainer
	clock *redistest.FakeClock // WithFakeClocks; nil: the real clock

	mu       sync.Mutex
	hostPort string
}

func newContainerBackend(ctx context.Context, tb testing.TB, image string, fakeClocks bool) (*containerBackend, error) {
	disableReaper()
	log := newTBLogger(tb)
	p, err := testcontainers.NewDockerProvider(testcontainers.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("docker provider: %w", err)
	}
	b := &containerBackend{tb: tb, image: image, fakeClocks: fakeClocks, provider: p, log: log}
	if image == DefaultImage {
		// Without a registry a pull would only retry and fail; say what to do.
		if _, err := p.Client().ImageInspect(ctx, image); err != nil {
			_ = p.Close()
			return nil, fmt.Errorf("image %s: %w; build it with `make -C integration redis-image`, "+
				"or set %s=redis:7 (pulled from a registry), or %s=%s", image, err, EnvImage, EnvBackend, Processes)
		}
	}
	return b, nil
}

// startServers starts the containers in parallel. The first node that
// fails cancels the others' starts, which would otherwise wait out their
// readiness timeout for nothing, and its error is the one returned; close
// still removes every container created.
func (b *containerBackend) startServers(ctx context.Context, ps []Persistence) ([]server, error) {
	out := make([]server, len(ps))
	g, ctx := errgroup.WithContext(ctx)
	for i, p := range ps {
		g.Go(func() error {
			s, err := b.startServer(ctx, i, p)
			if err != nil {
				return fmt.Errorf("node %d: %w", i, err)
			}
			out[i] = s
			return nil
		})
	}
	return out, g.Wait()
}

func (b *containerBackend) startServer(ctx context.Context, i int, p Persistence) (*containerServer, error) {
	args := append([]string{
		"--port", "6379", "--dir", "/data",
		// Debian's build keeps protected mode on, which refuses clients
		// coming through the bridge network.
		"--protected-mode", "no",
		"--save", "",
		"--maxmemory-policy", "noeviction",
	}, p.redisArgs()...)
	loopback := netip.MustParseAddr("127.0.0.1")
	req := testcontainers.ContainerRequest{
		Image: b.image,
		// The local image's entrypoint is redis-server; the official image's
		// entrypoint script prepends redis-server to arguments starting with --.
		Cmd:          args,
		ExposedPorts: []string{redisPort},
		Labels:       map[string]string{Label: "true", Label + ".node": strconv.Itoa(i)},
		HostConfigModifier: func(hc *container.HostConfig) {
			// Publish on loopback only: the nodes accept anyone.
			hc.PortBindings = network.PortMap{network.MustParsePort(redisPort): {{HostIP: loopback}}}
		},
		WaitingFor: pingStrategy{},
	}
	var clock *redistest.FakeClock
	if b.fakeClocks {
		var err error
		if clock, req.Env, err = b.fakeClock(&req); err != nil {
			return nil, err
		}
	}
	ctr, err := b.create(ctx, req)
	if err != nil {
		return nil, err
	}
	s := &containerServer{b: b, ctr: ctr, clock: clock}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// close removes every container, running, paused or stopped, with its
// anonymous volumes.
func (b *containerBackend) close(ctx context.Context) error {
	b.mu.Lock()
	ctrs := b.ctrs
	b.ctrs = nil
	b.mu.Unlock()
	cli := b.provider.Client()
	errs := make([]error, len(ctrs))
	var wg sync.WaitGroup
	for i, ctr := range ctrs {
		wg.Go(func() {
			_, err := cli.ContainerRemove(ctx, ctr.GetContainerID(), client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
			if err != nil {
				errs[i] = fmt.Errorf("remove container %.12s: %w", ctr.GetContainerID(), err)
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, b.provider.Close())...)
}

func (s *containerServer) addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return net.JoinHostPort("127.0.0.1", s.hostPort)
}

func (s *containerServer) kill(ctx context.Context) error {
	cli := s.b.provider.Client()
	id := s.ctr.GetContainerID()
	st, err := s.ctr.State(ctx)
	if err != nil {
		return err
	}
	if !st.Running {
		return nil
	}
	if st.Paused {
		// The engine refuses to kill a paused container. Commands queued
		// while it was frozen may run in the instant before the kill lands.
		if _, err := cli.ContainerUnpause(ctx, id, client.ContainerUnpauseOptions{}); err != nil {
			return fmt.Errorf("unpause before kill: %w", err)
		}
	}
	if _, err := cli.ContainerKill(ctx, id, client.ContainerKillOptions{Signal: "SIGKILL"}); err != nil {
		return fmt.Errorf("kill: %w", err)
	}
	for {
		st, err := s.ctr.State(ctx)
		if err != nil {
			return err
		}
		if !st.Running {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kill: container still running: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// start starts the container (created or killed) and waits for PING; Docker
// publishes the port anew, so it is read again.
func (s *containerServer) start(ctx context.Context) error {
	if s.clock != nil {
		if err := s.clock.Restarted(time.Now()); err != nil {
			return err
		}
	}
	if err := s.ctr.Start(ctx); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	if s.clock != nil {
		// redis-server is the entrypoint: it started when the container did,
		// which may be well after the request on a loaded machine.
		info, err := s.ctr.Inspect(ctx)
		if err != nil {
			return fmt.Errorf("inspect container: %w", err)
		}
		at, err := time.Parse(time.RFC3339Nano, info.State.StartedAt)
		if err != nil {
			return fmt.Errorf("container start time %q: %w", info.State.StartedAt, err)
		}
		if err := s.clock.Restarted(at); err != nil {
			return err
		}
	}
	port, err := s.ctr.MappedPort(ctx, redisPort)
	if err != nil {
		return fmt.Errorf("published port: %w", err)
	}
	s.mu.Lock()
	s.hostPort = strconv.Itoa(int(port.Num()))
	s.mu.Unlock()
	return nil
}

func (s *containerServer) pause(ctx context.Context) error {
	_, err := s.b.provider.Client().ContainerPause(ctx, s.ctr.GetContainerID(), client.ContainerPauseOptions{})
	return err
}

func (s *containerServer) unpause(ctx context.Context) error {
	_, err := s.b.provider.Client().ContainerUnpause(ctx, s.ctr.GetContainerID(), client.ContainerUnpauseOptions{})
	return err
}

// pingStrategy waits until Redis answers PING on the published port. It
// replaces a log-line strategy, which would match the previous run's log
// after a restart, and needs no shell in the image.
type pingStrategy struct{}

func (pingStrategy) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		err := pingOnce(ctx, target)
		if err == nil {
			return nil
		}
		if st, serr := target.State(ctx); serr == nil && !st.Running {
			return fmt.Errorf("redis exited (code %d) before answering: %v", st.ExitCode, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis not answering PING: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func pingOnce(ctx context.Context, target wait.StrategyTarget) error {
	port, err := target.MappedPort(ctx, redisPort)
	if err != nil {
		return err
	}
	c := redis.NewClient(&redis.Options{
		Addr:       net.JoinHostPort("127.0.0.1", strconv.Itoa(int(port.Num()))),
		MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second,
		DisableIdentity: true,
	})
	defer c.Close()
	return c.Ping(ctx).Err()
}

// tbLogger sends testcontainers' log lines to the test's log, so they show
// only for failed tests or with -v, and drops them once the test has ended
// (logging after that panics) until a test that reuses the cluster attaches.
type tbLogger struct {
	mu   sync.Mutex
	tb   testing.TB
	done bool
}

func newTBLogger(tb testing.TB) *tbLogger {
	l := &tbLogger{}
	l.attach(tb)
	return l
}

// attach sends the lines to tb until tb ends.
func (l *tbLogger) attach(tb testing.TB) {
	l.mu.Lock()
	l.tb, l.done = tb, false
	l.mu.Unlock()
	tb.Cleanup(func() {
		l.mu.Lock()
		l.done = true
		l.mu.Unlock()
	})
}

func (l *tbLogger) Printf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.tb.Logf(format, args...)
	}
}

// create creates a container from req and records it for close, even when
// it failed to start, so that nothing is left behind.
func (b *containerBackend) create(ctx context.Context, req testcontainers.ContainerRequest) (*testcontainers.DockerContainer, error) {
	c, err := b.provider.CreateContainer(ctx, req)
	ctr, _ := c.(*testcontainers.DockerContainer)
	if ctr != nil {
		b.mu.Lock()
		b.ctrs = append(b.ctrs, ctr)
		b.mu.Unlock()
	}
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	if ctr == nil {
		return nil, fmt.Errorf("create container: unexpected type %T", c)
	}
	return ctr, nil
}
