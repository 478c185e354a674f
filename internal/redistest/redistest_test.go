package redistest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/internal/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// outcome records how Binary ended a test, without ending the real one.
type outcome struct {
	testing.TB
	failed, skipped string
}

func (o *outcome) Helper() {}

func (o *outcome) Fatalf(format string, args ...any) {
	o.failed = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (o *outcome) Skip(args ...any) {
	o.skipped = fmt.Sprint(args...)
	runtime.Goexit()
}

// binary runs redistest.Binary on a recording TB, in a goroutine of its own
// so that Fatalf and Skip can end it as they end a test.
func binary(t *testing.T) (path string, o *outcome) {
	o = &outcome{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		path = redistest.Binary(o)
	}()
	<-done
	return path, o
}

func TestBinary(t *testing.T) {
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "redis-server"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name      string
		installed bool
		env       map[string]string
		want      string // "path", "fail" or "skip"
		hint      string // in the failure or skip message
	}{
		{name: "installed", installed: true, want: "path"},
		{name: "installed, opted out", installed: true, env: map[string]string{"REDLOCK_SKIP_REDIS": "1"}, want: "path"},
		{name: "missing fails by default", want: "fail", hint: "REDLOCK_SKIP_REDIS=1"},
		{name: "missing, install hint", want: "fail", hint: "apt-get install redis-server"},
		{name: "missing, opted out", env: map[string]string{"REDLOCK_SKIP_REDIS": "1"}, want: "skip", hint: "REDLOCK_SKIP_REDIS"},
		{name: "missing, opt-out false", env: map[string]string{"REDLOCK_SKIP_REDIS": "0"}, want: "fail"},
		{name: "missing in CI, opt-out ignored", env: map[string]string{"CI": "true", "REDLOCK_SKIP_REDIS": "1"}, want: "fail", hint: "required"},
		{name: "missing, required", env: map[string]string{"REDLOCK_REQUIRE_REDIS": "1", "REDLOCK_SKIP_REDIS": "1"}, want: "fail", hint: "required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, k := range []string{"CI", "REDLOCK_REQUIRE_REDIS", "REDLOCK_SKIP_REDIS"} {
				t.Setenv(k, tc.env[k])
			}
			if tc.installed {
				t.Setenv("PATH", fake)
			} else {
				t.Setenv("PATH", t.TempDir())
			}
			path, o := binary(t)
			got, msg := "path", ""
			switch {
			case o.failed != "":
				got, msg = "fail", o.failed
			case o.skipped != "":
				got, msg = "skip", o.skipped
			}
			if got != tc.want || !strings.Contains(msg, tc.hint) {
				t.Fatalf("Binary: %s %q; want %s mentioning %q", got, msg, tc.want, tc.hint)
			}
			if got == "path" && path != filepath.Join(fake, "redis-server") {
				t.Errorf("Binary returned %q; want the one on PATH", path)
			}
		})
	}
}

func TestStartN(t *testing.T) {
	servers := redistest.StartN(t, 2, redistest.NoPersistence)
	if len(servers) != 2 || servers[0].Port == servers[1].Port {
		t.Fatalf("StartN(2) gave %d servers", len(servers))
	}
	for _, s := range servers {
		if err := s.Client(t).Ping(t.Context()).Err(); err != nil {
			t.Errorf("%s: %v", s.Addr(), err)
		}
	}
}

// TestStartOnAnotherServersPortFails: a server that could not bind its port
// is not taken for ready because the server holding the port refuses INFO
// (it asks for a password), as one of another test binary's may. Before
// the check of the own log, such a start passed, and the test then talked
// to the other binary's server until it vanished (redlock package: "start
// redis-server: EOF" in a loaded make test).
func TestStartOnAnotherServersPortFails(t *testing.T) {
	other := redistest.StartWith(t, redistest.NoPersistence, "--requirepass", "sekrit")
	mine := &redistest.Server{Dir: t.TempDir(), Port: other.Port}
	t.Cleanup(mine.Kill)
	o := &outcome{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		mine.Restart(o)
	}()
	<-done
	if !strings.Contains(o.failed, "exited at start") {
		t.Fatalf("a start on a port another server holds: want a failure saying ours exited at start, got %q", o.failed)
	}
}
