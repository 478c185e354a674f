package chaos

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redlockgo/redlock/redlock"
)

// The safe schedule counts a node the clients keep out (quarantined after a
// fault) as down: a round starts only when its down faults and those nodes
// are at most two.
func TestAwaitRoomCountsQuarantinedNodesAsDown(t *testing.T) {
	cases := []struct {
		name   string
		faults []fault
		want   time.Duration
	}{
		{"two down: both quarantines end first", []fault{{kind: blackhole, node: 2}, {kind: pauseNode, node: 3}}, 3 * time.Second},
		{"one down: the first quarantine ends first", []fault{{kind: killAOF, node: 2}, {kind: latency, node: 3}}, time.Second},
		{"a fault on a node already out adds none", []fault{{kind: pauseNode, node: 1}}, 0},
		{"latency alone takes no node down", []fault{{kind: latency, node: 2}, {kind: latency, node: 3}}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				n := &nemesis{outUntil: map[int]time.Time{
					0: start.Add(time.Second), 1: start.Add(3 * time.Second), 4: start.Add(-time.Second),
				}}
				n.awaitRoom(context.Background(), tc.faults)
				assert.Equal(t, tc.want, time.Since(start))
			})
		})
	}
}

func TestAwaitRoomReturnsWhenTheRunEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := &nemesis{outUntil: map[int]time.Time{0: start.Add(time.Hour), 1: start.Add(time.Hour)}}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n.awaitRoom(ctx, []fault{{kind: blackhole, node: 2}})
		assert.Equal(t, time.Second, time.Since(start))
	})
}

func TestFailReasonCountsWhatTheNodesSaid(t *testing.T) {
	qe := &redlock.QuorumError{Op: "lock", Needed: 3, Total: 5, Nodes: []*redlock.NodeError{
		{Node: 0, Err: redlock.ErrTaken}, {Node: 1, Err: fmt.Errorf("dial: %w", redlock.ErrNodeTimeout)},
		{Node: 3, Err: redlock.ErrTaken}, {Node: 4, Err: errors.New("connection refused")},
	}}
	assert.Equal(t, "deadline; error:1 taken:2 timeout:1", failReason(fmt.Errorf("%w: %w", qe, context.DeadlineExceeded)))
	assert.Equal(t, "error:1 taken:2 timeout:1", failReason(qe))
	assert.Equal(t, "canceled", failReason(context.Canceled))
	assert.Equal(t, "boom", failReason(errors.New("boom")))

	var s stats
	for range 2 {
		s.fail(context.Canceled)
	}
	s.fail(errors.New("boom"))
	assert.Equal(t, []string{"2x canceled", "1x boom"}, s.topReasons(5))
	assert.Equal(t, []string{"2x canceled"}, s.topReasons(1))
	assert.EqualValues(t, 3, s.failed.Load())
}
