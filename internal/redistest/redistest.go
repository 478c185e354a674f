// Package redistest runs real redis-server processes for tests: one process
// per node on a loopback port, with kill, restart, pause (SIGSTOP) and resume.
//
// When redis-server is not on the PATH the tests that need it fail, with the
// install hint: `make test` passing on a machine without Redis would have run
// half the tests. To skip them knowingly, set REDLOCK_SKIP_REDIS=1; each skip
// then names the variable. The opt-out is ignored, and the tests fail, when
// CI or REDLOCK_REQUIRE_REDIS is set: CI must never count a skipped test as
// passing. With redis-server installed the tests run whatever the variables.
//
//	REDLOCK_SKIP_REDIS=1 make test   # no redis-server here: skip those tests
package redistest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/internal/keyspace"
)

// Persistence is how a node keeps its data across a restart.
type Persistence int

// Persistence modes.
const (
	// NoPersistence: a restarted node is empty.
	NoPersistence Persistence = iota
	// AOFAlways: every write is fsynced before the reply (appendfsync always).
	AOFAlways
	// AOFEverySec: writes are fsynced once a second.
	AOFEverySec
)

// Server is one redis-server process on 127.0.0.1.
type Server struct {
	Port        int
	Dir         string
	Persistence Persistence
	Extra       []string // more redis-server arguments
	// BusPort is the cluster bus port of a Redis Cluster node (StartCluster),
	// 0 for a standalone node.
	BusPort int

	mu       sync.Mutex
	clock    *FakeClock // StartWithFakeClock; nil: the real clock
	clockEnv []string   // the environment of a run under clock
	cmd      *exec.Cmd
	exited   chan struct{} // closed when cmd has been waited for

	// Reuse (reuse.go): touched is set once the server was killed,
	// restarted, signalled or its PID handed out, so that it is not kept;
	// firstConfig and firstACL are what a kept server looked like at its
	// first start.
	touched     bool
	firstConfig map[string]string
	firstACL    []string
}

// Binary returns the path of redis-server. When it is missing, Binary fails
// t, or skips it if the user opted out with REDLOCK_SKIP_REDIS (see the
// package comment); either way it does not return.
func Binary(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err == nil {
		return path
	}
	required := os.Getenv("CI") != "" || os.Getenv("REDLOCK_REQUIRE_REDIS") != ""
	if skip, _ := strconv.ParseBool(os.Getenv("REDLOCK_SKIP_REDIS")); skip && !required {
		t.Skip("redis-server not installed; real-Redis test skipped because REDLOCK_SKIP_REDIS is set")
	}
	if required {
		t.Fatalf("redis-server is required here (CI or REDLOCK_REQUIRE_REDIS is set) but not installed: %v", err)
	}
	t.Fatalf("redis-server not installed (%v): this test needs a real Redis; "+
		"install it (apt-get install redis-server), or set REDLOCK_SKIP_REDIS=1 to skip the real-Redis tests", err)
	return ""
}

// Start runs one redis-server and stops it when t ends. The new server
// carries the fresh-start declaration (see MarkFresh): a test's servers
// start with no lock on them, so the lock client's restart quarantine
// counts them at once. A Restart does not declare it again.
func Start(t testing.TB, p Persistence) *Server {
	t.Helper()
	return StartWith(t, p)
}

// StartWith is Start with extra redis-server arguments, such as
// "--rename-command", "CONFIG", "".
func StartWith(t testing.TB, p Persistence, extra ...string) *Server {
	t.Helper()
	if reusable(p, false, true, extra) {
		return startServers(t, 1, p, false, true)[0]
	}
	s := &Server{Dir: t.TempDir(), Persistence: p, Extra: extra}
	s.startFresh(t, false)
	s.MarkFresh(t)
	return s
}

// startFresh starts s on free ports (a cluster node's bus too), and stops
// it when t ends.
func (s *Server) startFresh(t testing.TB, cluster bool) {
	t.Helper()
	bin := Binary(t)
	t.Cleanup(s.Kill)
	if err := s.launch(bin, cluster); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
}

// launch starts s on free ports: a port picked free can be taken before
// redis binds it, so it tries five times.
func (s *Server) launch(bin string, cluster bool) error {
	var err error
	for range 5 {
		if s.Port, err = FreePort(); err != nil {
			continue
		}
		if cluster {
			if s.BusPort, err = FreePort(); err != nil {
				continue
			}
		}
		if err = s.start(bin); err == nil {
			return nil
		}
	}
	return err
}

// FreshStartKey is pool.FreshStartKey (a test in package redistest checks
// they agree; pool's own tests import this package).
const FreshStartKey = keyspace.FreshStart

// MarkFresh declares that the server's current run holds no lock an earlier
// run granted: it sets FreshStartKey to the run's run_id, which the lock
// client's restart quarantine honours. Tests that restart a server without
// persistence and do not study the restart call it to be counted at once.
// On a server that refuses INFO it does nothing.
func (s *Server) MarkFresh(t testing.TB) {
	t.Helper()
	if err := s.markFresh(); err != nil {
		t.Fatal(err)
	}
}

func (s *Server) markFresh() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.Info(ctx, "server").Result()
	var refused redis.Error
	if errors.As(err, &refused) {
		return nil // INFO renamed away: the node's age is unknown, and so is its run
	}
	if err == nil {
		err = errors.New("INFO server has no run_id")
		for line := range strings.Lines(info) {
			if id, ok := strings.CutPrefix(strings.TrimSpace(line), "run_id:"); ok {
				err = c.Set(ctx, FreshStartKey, id, 0).Err()
				break
			}
		}
	}
	if err != nil {
		return fmt.Errorf("mark redis-server on %s fresh: %w", s.Addr(), err)
	}
	return nil
}

// StartN runs n redis-servers with the same persistence, started at the
// same time (each is Start's: fresh, stopped when t ends).
func StartN(t testing.TB, n int, p Persistence) []*Server {
	t.Helper()
	return startN(t, n, p, true)
}

// StartNUndeclared is StartN without the fresh-start declaration, with
// extra redis-server arguments for each: a deployment's first day as an
// operator's stock nodes see it. Without persistence (AOFAlways) the lock
// client's restart quarantine keeps them out until they are older than it.
func StartNUndeclared(t testing.TB, n int, p Persistence, extra ...string) []*Server {
	t.Helper()
	return startN(t, n, p, false, extra...)
}

func startN(t testing.TB, n int, p Persistence, declare bool, extra ...string) []*Server {
	t.Helper()
	return startServers(t, n, p, false, declare, extra...)
}

// startServers starts n redis-servers at once, cluster nodes (each with a
// bus port, in no cluster yet) or standalone ones, declared fresh if
// declare is set; each is stopped when t ends. (18 cluster nodes with
// AOF: 0.43s one after the other, 0.24s at once, on a quiet machine.)
func startServers(t testing.TB, n int, p Persistence, cluster, declare bool, extra ...string) []*Server {
	t.Helper()
	bin := Binary(t)
	reuse := reusable(p, cluster, declare, extra)
	out := make([]*Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range out {
		if reuse {
			if s := takeKept(); s != nil {
				out[i] = s
				t.Cleanup(s.handBack)
				continue
			}
		}
		// A server that may be kept has a data directory that outlives t.
		dir, keep := "", false
		if reuse {
			dir, keep = keepDir()
		}
		if !keep {
			dir = t.TempDir()
		}
		s := &Server{Dir: dir, Persistence: p, Extra: extra}
		out[i] = s
		if keep {
			t.Cleanup(s.handBack)
		} else {
			t.Cleanup(s.Kill)
		}
		wg.Go(func() {
			if errs[i] = s.launch(bin, cluster); errs[i] != nil {
				return
			}
			if declare {
				errs[i] = s.markFresh()
			}
			if errs[i] == nil && keep {
				errs[i] = s.remember()
			}
			if errs[i] != nil {
				errs[i] = s.after(errs[i])
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	return out
}

// StartMany calls start n times, one server after the other, and returns the
// servers in order: StartN for any kind of server (redistls uses it too).
func StartMany[S any](t testing.TB, n int, start func(testing.TB) S) []S {
	t.Helper()
	out := make([]S, n)
	for i := range out {
		out[i] = start(t)
	}
	return out
}

// Addr returns host:port.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.Port) }

// URL returns the redis:// URL of the node.
func (s *Server) URL() string { return "redis://" + s.Addr() }

func (s *Server) args() []string {
	a := []string{
		"--port", strconv.Itoa(s.Port), "--bind", "127.0.0.1", "--dir", s.Dir,
		"--save", "", "--protected-mode", "no", "--daemonize", "no",
		"--maxmemory-policy", "noeviction", "--logfile", filepath.Join(s.Dir, "redis.log"),
	}
	if s.BusPort != 0 {
		// Without full coverage a cluster that lost a shard still serves the
		// other shards' slots: a Redlock node fails only that shard's keys.
		a = append(a, "--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(s.BusPort),
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
			"--cluster-require-full-coverage", "no")
	}
	switch s.Persistence {
	case AOFAlways:
		a = append(a, "--appendonly", "yes", "--appendfsync", "always")
	case AOFEverySec:
		a = append(a, "--appendonly", "yes", "--appendfsync", "everysec")
	default:
		a = append(a, "--appendonly", "no")
	}
	return append(a, s.Extra...)
}

func (s *Server) start(bin string) error {
	cmd := exec.Command(bin, s.args()...)
	if s.clock != nil {
		if err := s.clock.Restarted(time.Now()); err != nil {
			return err
		}
		cmd.Env = s.clockEnv
	}
	// The log is appended to across restarts: only what this run writes
	// after off tells whether it bound the port.
	logFile := filepath.Join(s.Dir, "redis.log")
	var off int64
	if fi, err := os.Stat(logFile); err == nil {
		off = fi.Size()
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	if err := waitReady(s.Addr(), cmd.Process.Pid, exited, func() bool { return loggedReady(logFile, off) }); err != nil {
		s.Kill()
		log, _ := os.ReadFile(logFile)
		return fmt.Errorf("%w; log:\n%s", err, log)
	}
	return nil
}

// waitReady waits until the server of process pid answers on addr. It asks
// the answering server its process_id: the port was picked free, but
// another test binary running at the same time (go test runs packages in
// parallel) can bind it first, and then our server exits while theirs
// answers our ping, to vanish when that test ends. A server that refuses
// INFO (renamed away, or asking for a password: a test's own options)
// cannot tell its process_id; it counts as ours only once ownReady reports
// that our process logged it accepts connections, since another binary's
// server refuses INFO too when it asks for a password (cmd/redlock's tests
// start such servers while the redlock package's tests run).
func waitReady(addr string, pid int, exited <-chan struct{}, ownReady func() bool) error {
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	want := "process_id:" + strconv.Itoa(pid)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return fmt.Errorf("redis-server on %s exited at start", addr)
		default:
		}
		// A plain dial first: a server starts in about 10ms, and go-redis
		// backs off after failed dials (a tenth of a second per server).
		conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err != nil {
			time.Sleep(2 * time.Millisecond)
			continue
		}
		_ = conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		info, err := c.Info(ctx, "server").Result()
		cancel()
		if err == nil {
			for line := range strings.Lines(info) {
				if strings.TrimSpace(line) == want {
					return nil
				}
			}
			// Another process's server: ours exits when it fails to bind.
		}
		var refused redis.Error
		if errors.As(err, &refused) && !strings.HasPrefix(refused.Error(), "LOADING") && ownReady() {
			return nil // INFO refused by our own server (renamed away, or a password)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on %s not ready after 10s", addr)
}

// after describes err, a failure of a call to s once it had started: the
// address, whether the process still runs, and its log.
func (s *Server) after(err error) error {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	state := "stopped by the test"
	if cmd != nil {
		select {
		case <-exited:
			state = "exited: " + cmd.ProcessState.String()
		default:
			state = "running as pid " + strconv.Itoa(cmd.Process.Pid)
		}
	}
	log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
	return fmt.Errorf("redis-server on %s (%s): %w; log:\n%s", s.Addr(), state, err, log)
}

// loggedReady reports whether the log at path, past its first off bytes,
// says the server accepts connections: redis writes it once it has bound
// its port, and exits instead when another process holds the port.
func loggedReady(path string, off int64) bool {
	log, err := os.ReadFile(path)
	if err != nil || int64(len(log)) < off {
		return false
	}
	return bytes.Contains(log[off:], []byte("Ready to accept connections"))
}

// Kill stops the process at once (SIGKILL), without saving. Safe to call on
// a stopped server.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.touched = nil, true
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = cmd.Process.Kill() // SIGKILL works on a stopped process too
	<-exited
}

// Restart kills the process and starts it again on the same port and data
// directory: what survives depends on Persistence.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Kill()
	if err := s.start(Binary(t)); err != nil {
		t.Fatalf("restart redis-server on %s: %v", s.Addr(), err)
	}
}

// Pause stops the process with SIGSTOP: connections stay open, nothing is
// answered.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused process.
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	s.touched = true
	s.mu.Unlock()
	s.idleSignal(sig)
}

// Client returns a plain go-redis client for inspecting the node, closed
// when t ends.
func (s *Server) Client(t testing.TB) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// FreePort returns a loopback TCP port that was free a moment ago: another
// process may take it before the caller binds it, so callers retry.
func FreePort() (int, error) {
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if _, used := handedOut.LoadOrStore(port, true); !used {
			return port, nil
		}
	}
	return 0, errors.New("redistest: no port that was not handed out before")
}

// handedOut holds every port FreePort returned in this process. A port is
// never handed out twice: a killed server's address stays in its peers'
// minds (a cluster's nodes keep calling it, a pool keeps dialling it), and
// a new server of a test running in parallel must not answer there.
var handedOut sync.Map

// PID returns the process id of the running redis-server, or 0 when it is
// stopped.
func (s *Server) PID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touched = true // the caller may signal it: not kept (reuse.go)
	if s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}
