package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
)

func TestSilenceMarksTimeoutsAndClearsOnAnyOtherOutcome(t *testing.T) {
	s := make(silence, 2)
	for _, step := range []struct {
		err    error
		silent bool
	}{
		{context.DeadlineExceeded, true},
		{nil, false},
		{fmt.Errorf("read: %w", os.ErrDeadlineExceeded), true},
		{errors.New("connection refused"), false}, // refusing is not silent: a round learns it at once
		{ErrTimeout, true},
	} {
		s.note(1, step.err)
		if got := s.silent(1); got != step.silent {
			t.Errorf("after %v: silent = %v; want %v", step.err, got, step.silent)
		}
		if s.silent(0) {
			t.Fatal("another node was marked")
		}
	}
	s.note(5, context.DeadlineExceeded) // out of range: ignored
	if s.silent(5) {
		t.Error("out of range reported silent")
	}
}
