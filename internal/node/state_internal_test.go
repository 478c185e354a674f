package node

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

var errHeld = errors.New("held")

func TestStateFollowsReachThenTrust(t *testing.T) {
	s := &Set{states: make([]nodeState, 2), cfg: Config{Refusal: func(err error) bool { return errors.Is(err, errHeld) }}}
	refused := errors.New("connection refused")
	for _, step := range []struct {
		name  string
		do    func()
		want  State
		cause error
	}{
		{"fresh", func() {}, StateOK, nil},
		{"timeout", func() { s.Note(1, context.DeadlineExceeded) }, StateSilent, context.DeadlineExceeded},
		{"canceled keeps", func() { s.Note(1, context.Canceled) }, StateSilent, context.DeadlineExceeded},
		{"refused", func() { s.Note(1, refused) }, StateFailing, refused},
		{"answer", func() { s.Note(1, nil) }, StateOK, nil},
		{"quarantined", func() { s.noteTrust(1, fmt.Errorf("%w: young", ErrQuarantined)) }, StateQuarantined, ErrQuarantined},
		{"held keeps trust", func() { s.Note(1, errHeld) }, StateQuarantined, ErrQuarantined},
		{"silent over trust", func() { s.Note(1, ErrTimeout) }, StateSilent, ErrTimeout},
		{"answers again", func() { s.Note(1, nil) }, StateQuarantined, ErrQuarantined},
		{"clock", func() { s.noteTrust(1, ErrClock) }, StateClockSuspect, ErrClock},
		{"counts", func() { s.noteTrust(1, nil) }, StateOK, nil},
	} {
		step.do()
		got, cause := s.State(1)
		if got != step.want || !errors.Is(cause, step.cause) || (step.cause == nil) != (cause == nil) {
			t.Fatalf("%s: State = %v, %v; want %v, %v", step.name, got, cause, step.want, step.cause)
		}
		if other, _ := s.State(0); other != StateOK {
			t.Fatalf("%s: another node changed: %v", step.name, other)
		}
	}
}

func TestStateNoteAllocatesNothingWhenUnchanged(t *testing.T) {
	s := &Set{states: make([]nodeState, 1), silence: make(silence, 1)}
	if n := testing.AllocsPerRun(100, func() { s.Note(0, nil); s.noteTrust(0, nil) }); n != 0 {
		t.Fatalf("a healthy node's Note and Health allocate %v times", n)
	}
	refused := errors.New("connection refused")
	s.Note(0, refused)
	if n := testing.AllocsPerRun(100, func() { s.Note(0, refused) }); n != 0 {
		t.Fatalf("a node that keeps failing allocates %v times per Note", n)
	}
}
