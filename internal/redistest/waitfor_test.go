package redistest_test

import (
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redlockgo/redlock/internal/redistest"
)

func TestAwait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := redistest.Await(time.Second, "the third call", func() (bool, string) {
			calls++
			return calls == 3, "call " + strconv.Itoa(calls)
		})
		if err != nil || calls != 3 {
			t.Fatalf("Await: %v after %d calls; want nil after 3", err, calls)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		start, calls := time.Now(), 0
		err := redistest.Await(time.Second, "a condition that never holds", func() (bool, string) {
			calls++
			return false, "call " + strconv.Itoa(calls)
		})
		if err == nil {
			t.Fatal("Await: nil for a condition that never holds")
		}
		msg := err.Error()
		for _, want := range []string{"a condition that never holds", "bound 1s", "call " + strconv.Itoa(calls)} {
			if !strings.Contains(msg, want) {
				t.Errorf("Await: %q does not say %q", msg, want)
			}
		}
		if waited := time.Since(start); waited < time.Second || waited > time.Second+100*time.Millisecond {
			t.Errorf("Await gave up after %v; want just past its 1s bound", waited)
		}
	})
}
