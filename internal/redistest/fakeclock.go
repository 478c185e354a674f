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
	preload, err := FakeClockPreload()
	if err != nil {
		t.Fatalf("fake clock: %v", err)
	}
	clock, err := NewFakeClock(filepath.Join(t.TempDir(), "faketime"))
	if err != nil {
		t.Fatalf("fake clock: %v", err)
	}
	s := &Server{Dir: t.TempDir(), Persistence: p, Extra: extra, clock: clock,
		clockEnv: append(os.Environ(), FakeClockEnv(preload, clock.File())...)}
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
	return s.clock.Set(offset, rate)
}

// FakeClock is the clock setting of one redis-server run under libfaketime:
// a file that libfaketime reads on every clock call (FakeClockEnv). Safe
// for concurrent use.
type FakeClock struct {
	file string

	mu      sync.Mutex
	offset  time.Duration
	rate    float64
	started time.Time // when the current run was started, ~ libfaketime's start
}

// NewFakeClock writes the real clock's setting (no offset, rate 1) to file,
// which the server reads as FAKETIME_TIMESTAMP_FILE.
func NewFakeClock(file string) (*FakeClock, error) {
	c := &FakeClock{file: file, rate: 1, started: time.Now()}
	return c, c.write("+0")
}

// File returns the setting's file.
func (c *FakeClock) File() string { return c.file }

// Set makes the server's wall clock read offset ahead of the real one now,
// and advance at rate times the real clock's speed from now on (see
// Server.SetClock). The setting is written in one rename, so the server
// never reads half of it.
func (c *FakeClock) Set(offset time.Duration, rate float64) error {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return fmt.Errorf("redistest: clock rate must be positive, got %v", rate)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset, c.rate = offset, rate
	return c.write(c.spec(time.Now()))
}

// Restarted records that the server starts again at about at: libfaketime
// starts over, so the rate applies from then, from the offset set last. Call
// it just before each start, and again with the start's exact time once it
// is known (a container's State.StartedAt): with a rate other than 1, an
// error in at becomes a jump of that error times rate-1 in the server's
// clock.
func (c *FakeClock) Restarted(at time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = at
	return c.write(c.spec(time.Now()))
}

// FakeClockEnv is the environment of a redis-server under libfaketime:
// preload (FakeClockPreload, or its paths inside a container) and the
// setting's file as the server sees it.
func FakeClockEnv(preload, file string) []string {
	return []string{
		"LD_PRELOAD=" + preload,
		"FAKETIME_TIMESTAMP_FILE=" + file,
		"FAKETIME_NO_CACHE=1",
		"FAKETIME_DONT_FAKE_MONOTONIC=1",
	}
}

// spec is libfaketime's setting for offset and rate from now on.
// libfaketime applies a rate from the process's start ("+X xR" reads
// real + X + (now-start)*(R-1)), so the offset written takes back what the
// rate would have added since the start: the clock does not jump when the
// rate changes, beyond the few milliseconds between exec and libfaketime's
// start, times R-1.
func (c *FakeClock) spec(now time.Time) string {
	off := c.offset.Seconds() - now.Sub(c.started).Seconds()*(c.rate-1)
	if c.rate == 1 {
		return fmt.Sprintf("%+.6f", off)
	}
	return fmt.Sprintf("%+.6f x%s", off, strconv.FormatFloat(c.rate, 'f', -1, 64))
}

func (c *FakeClock) write(spec string) error {
	tmp := c.file + ".tmp"
	if err := os.WriteFile(tmp, []byte(spec+"\n"), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, c.file)
}

var shim struct {
	once    sync.Once
	preload string
	err     error
}

// FakeClockPreload builds the shim once per process (into the temporary
// directory, named after its source's hash, so test processes share it)
// and returns the LD_PRELOAD value: the shim, then libfaketime.
func FakeClockPreload() (string, error) {
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
