package chaos

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
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
