package redistest

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"
)

// A fake clock runs redis-server under libfaketime (Debian's libfaketime
// package), with the libcmalloc shim in testdata preloaded before it: Debian's
// redis-server links jemalloc, which deadlocks with libfaketime at start
// (testdata/libcmalloc.c says why). The clock is set through a file that
// libfaketime reads on every clock call (FAKETIME_NO_CACHE), so a change
// takes effect at once; the monotonic clock stays real
// (FAKETIME_DONT_FAKE_MONOTONIC), as in a real clock fault: Redis expires
// keys and reports TIME and its uptime by the wall clock.

// libFaketime is where Debian's libfaketime package puts the library, for
// any architecture; REDLOCK_LIBFAKETIME names it on other systems.
const libFaketime = "/usr/lib/*/faketime/libfaketime.so.1"

// StartWithFakeClock is StartWith for a server whose wall clock SetClock
// moves. It fails t, with what to install, when libfaketime or a C compiler
// (for the shim) is missing.
func StartWithFakeClock(t testing.TB, p Persistence, extra ...string) *Server {
	t.Helper()
	preload, err := fakeClockPreload()
	if err != nil {
		t.Fatalf("fake clock: %v", err)
	}
	s := &Server{Dir: t.TempDir(), Persistence: p, Extra: extra,
		clock: &fakeClock{preload: preload, file: filepath.Join(t.TempDir(), "faketime")}}
	if err := s.clock.write("+0"); err != nil {
		t.Fatalf("fake clock: %v", err)
	}
	s.startFresh(t, false)
	s.MarkFresh(t)
	return s
}

// SetClock makes the server's wall clock read offset ahead of the real one
// now, and advance at rate times the real clock's speed from now on: (0, 1)
// is the real clock, (2*time.Second, 1) a forward jump of 2s, (0, 1.5) a
// clock 50% fast. It applies to the current run and is kept across Restart,
// where it starts again from offset. It returns an error on a server
// started without a fake clock, or for a rate that is not positive.
func (s *Server) SetClock(offset time.Duration, rate float64) error {
	if s.clock == nil {
		return errors.New("redistest: SetClock on a server started without a fake clock (StartWithFakeClock)")
	}
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("redistest: clock rate must be positive, got %v", rate)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clock.offset, s.clock.rate = offset, rate
	return s.clock.write(s.clock.spec(time.Now()))
}

// fakeClock is a server's libfaketime setting.
type fakeClock struct {
	preload string // LD_PRELOAD: the shim, then libfaketime
	file    string // FAKETIME_TIMESTAMP_FILE

	// guarded by Server.mu
	offset  time.Duration
	rate    float64
	started time.Time // when the current run was started, ~ libfaketime's start
}

// spec is libfaketime's setting for offset and rate from now on.
// libfaketime applies a rate from the process's start ("+X xR" reads
// real + X + (now-start)*(R-1)), so the offset written takes back what the
// rate would have added since the start: the clock does not jump when the
// rate changes, beyond the few milliseconds between exec and libfaketime's
// start, times R-1.
func (c *fakeClock) spec(now time.Time) string {
	rate := c.rate
	if rate == 0 {
		rate = 1
	}
	off := c.offset.Seconds() - now.Sub(c.started).Seconds()*(rate-1)
	if rate == 1 {
		return fmt.Sprintf("%+.6f", off)
	}
	return fmt.Sprintf("%+.6f x%s", off, strconv.FormatFloat(rate, 'f', -1, 64))
}

// restarted records a new run: libfaketime starts again, so the rate
// applies from now and the offset is written again.
func (c *fakeClock) restarted(now time.Time) error {
	c.started = now
	return c.write(c.spec(now))
}

// write replaces the file in one rename: libfaketime never reads half of it.
func (c *fakeClock) write(spec string) error {
	tmp := c.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(spec+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.file)
}

// env is the environment of a run under the fake clock.
func (c *fakeClock) env() []string {
	return append(os.Environ(),
		"LD_PRELOAD="+c.preload,
		"FAKETIME_TIMESTAMP_FILE="+c.file,
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	)
}

var shim struct {
	once    sync.Once
	preload string
	err     error
}

// fakeClockPreload builds the shim once per process (into the temporary
// directory, named after its source's hash, so test processes share it)
// and returns the LD_PRELOAD value.
func fakeClockPreload() (string, error) {
	shim.once.Do(func() { shim.preload, shim.err = buildShim() })
	return shim.preload, shim.err
}

func buildShim() (string, error) {
	lib := os.Getenv("REDLOCK_LIBFAKETIME")
	if lib == "" {
		found, _ := filepath.Glob(libFaketime)
		if len(found) == 0 {
			return "", fmt.Errorf("no %s (apt-get install libfaketime, or set REDLOCK_LIBFAKETIME)", libFaketime)
		}
		lib = found[0]
	}
	_, file, _, _ := runtime.Caller(0)
	src := filepath.Join(filepath.Dir(file), "testdata", "libcmalloc.c")
	code, err := os.ReadFile(src)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(code)
	out := filepath.Join(os.TempDir(), "redlock-libcmalloc-"+hex.EncodeToString(sum[:8])+".so")
	if _, err := os.Stat(out); err != nil {
		cc := cmpOr(os.Getenv("CC"), "gcc")
		tmp := fmt.Sprintf("%s.%d", out, os.Getpid())
		if b, err := exec.Command(cc, "-shared", "-fPIC", "-O2", "-o", tmp, src, "-ldl").CombinedOutput(); err != nil {
			return "", fmt.Errorf("build the libcmalloc shim with %s (apt-get install gcc): %w\n%s", cc, err, b)
		}
		if err := os.Rename(tmp, out); err != nil {
			return "", err
		}
	}
	return out + " " + lib, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
