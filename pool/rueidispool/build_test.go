package rueidispool

import (
	"testing"

	"github.com/redis/rueidis"
)

func TestBuildTurnsTheSlotPanicIntoAnError(t *testing.T) {
	_, err := build(func() rueidis.Completed {
		panic("multi key command with different key slots are not allowed")
	})
	if err == nil {
		t.Fatal("want an error for keys in different slots")
	}
	defer func() {
		if recover() == nil {
			t.Error("other panics must go on")
		}
	}()
	_, _ = build(func() rueidis.Completed { panic(42) })
}
