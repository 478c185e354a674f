package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// binary is the redlock command built once for the tests that need a real
// process: signals, exit codes, process groups.
var binary string

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	redis.SetLogger(quietLogger{}) // as main does
	dir, err := os.MkdirTemp("", "redlock-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "redlock")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race") // the binary's own races fail the tests too
	}
	if out, err := exec.Command(goTool(), append(args, ".")...).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the redlock binary: %v\n%s", err, out)
		return 1
	}
	code := m.Run()
	if code == 0 {
		if err := findLeaks(); err != nil {
			fmt.Fprintln(os.Stderr, "leaked goroutines:", err)
			return 1
		}
	}
	return code
}

// findLeaks looks for goroutines left running, giving a few seconds to
// those that end late by design: after repeated dial failures (a killed
// node) go-redis probes the node from a goroutine that sleeps a second
// between tries and notices Close only when it wakes.
func findLeaks() error {
	var err error
	for range 3 {
		if err = goleak.Find(); err == nil {
			return nil
		}
	}
	return err
}

func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(os.Getenv("GOROOT"), "bin", "go")
}

// testNodes are real redis-server processes for one test.
type testNodes struct {
	servers []*redistest.Server
	urls    string
}

func startNodes(t *testing.T, n int) *testNodes {
	t.Helper()
	tn := &testNodes{servers: redistest.StartN(t, n, redistest.NoPersistence)}
	urls := make([]string, n)
	for i, s := range tn.servers {
		urls[i] = s.URL()
	}
	tn.urls = strings.Join(urls, ",")
	return tn
}

// pools returns a Pool per node, closed when t ends.
func (tn *testNodes) pools(t *testing.T) []pool.Pool {
	t.Helper()
	pools := make([]pool.Pool, len(tn.servers))
	for i, s := range tn.servers {
		p, err := pool.FromURL(s.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	return pools
}

// client returns a redlock Client on the nodes, closed when t ends, with a
// node timeout generous enough for a loaded machine.
func (tn *testNodes) client(t *testing.T) *redlock.Client {
	t.Helper()
	c, err := redlock.New(tn.pools(t), redlock.WithNodeTimeout(500*time.Millisecond))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// values returns the value of key on each node ("" when absent).
func (tn *testNodes) values(t *testing.T, key string) []string {
	t.Helper()
	out := make([]string, len(tn.servers))
	for i, s := range tn.servers {
		v, err := s.Client(t).Get(context.Background(), key).Result()
		if err == nil {
			out[i] = v
		}
	}
	return out
}

// requireFree fails t unless key, and its holder record, are absent on
// every node.
func (tn *testNodes) requireFree(t *testing.T, key string) {
	t.Helper()
	require.Equal(t, make([]string, len(tn.servers)), tn.values(t, key), "key %q left on the nodes", key)
	require.Equal(t, make([]string, len(tn.servers)), tn.values(t, holderKey(key)), "holder record of %q left on the nodes", key)
}

// named returns the nodes' URLs with a client name, by which the test can
// see the binary's connections on the nodes.
func (tn *testNodes) named(name string) string {
	urls := make([]string, len(tn.servers))
	for i, s := range tn.servers {
		urls[i] = s.URL() + "?client_name=" + name
	}
	return strings.Join(urls, ",")
}

// waitConnected waits until p has a connection named name on the first
// node: it has parsed its flags and reached the nodes.
func (tn *testNodes) waitConnected(t *testing.T, p *proc, name string) {
	t.Helper()
	c := tn.servers[0].Client(t)
	for !strings.Contains(c.ClientList(context.Background()).Val(), "name="+name+" ") {
		if p.done() {
			t.Fatalf("exited before connecting: %d\nstderr: %s", p.code, p.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// proc is a running redlock binary.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	exited         chan struct{}
	code           int
}

// procTimeout bounds every run of the binary: far above what any test
// needs, so that a hang fails the test rather than the whole run.
const procTimeout = 2 * time.Minute

// start runs the binary with args, stdin, and env added to the test's
// environment. The process is killed and waited for when t ends.
func start(t *testing.T, stdin string, env []string, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), procTimeout)
	p := &proc{
		cmd:    exec.CommandContext(ctx, binary, args...),
		stdout: &syncBuffer{},
		stderr: &syncBuffer{},
		exited: make(chan struct{}),
	}
	p.cmd.Stdin = strings.NewReader(stdin)
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.WaitDelay = 5 * time.Second
	require.NoError(t, p.cmd.Start())
	go func() {
		defer close(p.exited)
		defer cancel()
		err := p.cmd.Wait()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			p.code = ee.ExitCode()
		default:
			p.code = -1
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// run runs the binary to its end.
func run(t *testing.T, args ...string) *proc {
	t.Helper()
	p := start(t, "", nil, args...)
	p.wait(t)
	return p
}

// wait waits for the process to exit and returns its exit code.
func (p *proc) wait(t *testing.T) int {
	t.Helper()
	<-p.exited
	p.checkClean(t)
	return p.code
}

// done reports whether the process has exited.
func (p *proc) done() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// checkClean fails t if the binary panicked or raced.
func (p *proc) checkClean(t *testing.T) {
	t.Helper()
	all := p.stdout.String() + p.stderr.String()
	for _, bad := range []string{"panic:", "goroutine ", "DATA RACE"} {
		require.NotContains(t, all, bad, "output of redlock %v", p.cmd.Args[1:])
	}
}

// waitOutput waits until stdout contains s, failing t if the process exits
// first or procTimeout passes.
func (p *proc) waitOutput(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(procTimeout)
	for !strings.Contains(p.stdout.String(), s) {
		if p.done() || time.Now().After(deadline) {
			t.Fatalf("no %q on stdout; exit %d\nstdout: %s\nstderr: %s", s, p.code, p.stdout, p.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// keyFor returns a key unique to the test, so that a failure never leaks
// into another test's view of the nodes.
func keyFor(t *testing.T) string {
	return "cli-test:" + strings.ReplaceAll(t.Name(), "/", ":")
}

// hold takes key on every node for the test, and waits until each node has
// our token: TryLock returns at the majority, a straggler's SET may land a
// moment later.
func (tn *testNodes) hold(t *testing.T, key string, ttl time.Duration) *redlock.Lock {
	t.Helper()
	l, err := tn.client(t).TryLock(context.Background(), key, ttl)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, s := range tn.servers {
			if s.Client(t).Get(context.Background(), key).Val() != l.Token() {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "every node holds the lock")
	return l
}
