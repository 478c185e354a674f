package redistest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Reuse of plain servers across the tests of one binary. Starting a
// redis-server costs about 40ms of CPU (exec, dynamic linking, its own
// start), and the redlock package's tests start some 850 of them per pass:
// on a two-core machine that is a sixth of the CPU its parallel tests
// share. Most tests leave their servers as they found them, but for the
// keys: those servers can serve a later test once emptied.
//
// Only the servers StartN and Start make with no persistence and no extra
// arguments are reused (declared fresh: such a test cannot tell a server's
// age). A server a test killed, restarted, paused or resumed is not; nor
// one whose configuration, ACL or role differs from its first start's, or
// that a step of the reset below refused: each is killed, as before.

// kept is the binary's reuse state (Reuse).
var kept struct {
	mu   sync.Mutex
	on   bool
	dir  string    // the kept servers' data directories live here
	idle []*Server // reset, waiting for a test
}

// Reuse runs run (a TestMain's m.Run) with reuse of plain servers on, then
// kills the servers kept idle and returns run's code:
//
//	func TestMain(m *testing.M) { os.Exit(redistest.Reuse(m.Run)) }
//
// Servers are handed back when their test ends (after its other cleanups:
// its clients are closed by then), emptied and reset, and only then given
// to another test. A test binary that does not call Reuse starts a server
// for every call, as before.
func Reuse(run func() int) int {
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return run() // no place for the kept servers' data: no reuse
	}
	kept.mu.Lock()
	kept.on, kept.dir = true, dir
	kept.mu.Unlock()
	defer func() {
		kept.mu.Lock()
		idle := kept.idle
		kept.on, kept.idle = false, nil
		kept.mu.Unlock()
		for _, s := range idle {
			s.Kill()
		}
		_ = os.RemoveAll(dir)
	}()
	return run()
}

// reusable reports whether servers of these settings may be kept.
func reusable(p Persistence, cluster, declare bool, extra []string) bool {
	return p == NoPersistence && !cluster && declare && len(extra) == 0
}

// takeKept returns an idle kept server, or nil (reuse off, none idle).
func takeKept() *Server {
	kept.mu.Lock()
	defer kept.mu.Unlock()
	if !kept.on || len(kept.idle) == 0 {
		return nil
	}
	s := kept.idle[len(kept.idle)-1]
	kept.idle = kept.idle[:len(kept.idle)-1]
	s.idleSignal(syscall.SIGCONT)
	return s
}

// idleSignal stops (SIGSTOP) a kept server while it is idle, and continues
// it (SIGCONT) when a test takes it: an idle redis-server's timer costs 3ms
// of CPU a second, and tens of them wait at once. Unlike Pause and Resume,
// it does not mark the server touched.
func (s *Server) idleSignal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(sig)
	}
}

// keepDir returns a data directory for a server that may be kept: one
// that outlives the test that started it. ok is false when reuse is off.
func keepDir() (string, bool) {
	kept.mu.Lock()
	on, dir := kept.on, kept.dir
	kept.mu.Unlock()
	if !on {
		return "", false
	}
	d, err := os.MkdirTemp(dir, "node-")
	return d, err == nil
}

// handBack ends a kept server's use by a test: it resets the server and
// keeps it idle, or kills it when the test changed what a reset cannot
// undo (or a step failed). It is the t.Cleanup of such a server.
func (s *Server) handBack() {
	s.mu.Lock()
	touched, running := s.touched, s.cmd != nil
	s.mu.Unlock()
	if touched || !running {
		s.Kill()
		return
	}
	if err := s.reset(); err != nil {
		s.Kill()
		return
	}
	kept.mu.Lock()
	defer kept.mu.Unlock()
	if !kept.on {
		go s.Kill() // the binary's tests are over
		return
	}
	s.idleSignal(syscall.SIGSTOP)
	kept.idle = append(kept.idle, s)
}

// reset empties the server and checks that it is as it first started:
// every configuration parameter, the ACL, a master with no replica. It
// drops every other connection (a pub/sub one included), the keys of every
// database, the scripts and functions, the statistics and logs, and
// declares the run fresh again, as Start does.
func (s *Server) reset() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, ReadTimeout: 2 * time.Second})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Do(ctx, "CLIENT", "UNPAUSE").Err() // a test's CLIENT PAUSE (errors on Redis < 6.2, which has none)
	cfg, acl, err := settings(ctx, c)
	if err != nil {
		return err
	}
	if !maps.Equal(cfg, s.firstConfig) {
		return errors.New("configuration changed")
	}
	if !slices.Equal(acl, s.firstACL) {
		return errors.New("ACL changed")
	}
	role, err := c.Do(ctx, "ROLE").Slice()
	if err != nil {
		return err
	}
	if len(role) < 3 || role[0] != "master" {
		return fmt.Errorf("role %v", role)
	}
	if replicas, _ := role[2].([]any); len(replicas) > 0 {
		return fmt.Errorf("%d replicas", len(replicas))
	}
	steps := [][]any{
		{"CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"},
		{"CLIENT", "KILL", "TYPE", "pubsub", "SKIPME", "yes"},
		{"FLUSHALL", "SYNC"},
		{"SCRIPT", "FLUSH", "SYNC"},
		{"FUNCTION", "FLUSH", "SYNC"},
		{"CONFIG", "RESETSTAT"},
		{"SLOWLOG", "RESET"},
		{"LATENCY", "RESET"},
	}
	for _, step := range steps {
		if err := c.Do(ctx, step...).Err(); err != nil {
			return fmt.Errorf("%v: %w", step, err)
		}
	}
	if err := s.markFresh(); err != nil {
		return err
	}
	if n, err := c.DBSize(ctx).Result(); err != nil || n != 1 {
		return fmt.Errorf("after the reset: %d keys (%v)", n, err)
	}
	return nil
}

// settings reads every configuration parameter and the ACL rules.
func settings(ctx context.Context, c *redis.Client) (map[string]string, []string, error) {
	cfg, err := c.ConfigGet(ctx, "*").Result()
	if err != nil {
		return nil, nil, err
	}
	acl, err := c.Do(ctx, "ACL", "LIST").StringSlice()
	if err != nil {
		return nil, nil, err
	}
	return cfg, acl, nil
}

// remember records what a server that may be kept looks like at its first
// start, for reset to compare with.
func (s *Server) remember() error {
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cfg, acl, err := settings(ctx, c)
	if err != nil {
		return err
	}
	s.firstConfig, s.firstACL = cfg, acl
	return nil
}
