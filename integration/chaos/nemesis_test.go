package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
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

// A majority-amnesia round takes three nodes down: it waits until no node
// is out at all, so that no other fault joins it.
func TestAwaitRoomMajorityWaitsForEveryQuarantine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		n := &nemesis{outUntil: map[int]time.Time{0: start.Add(time.Second), 1: start.Add(3 * time.Second), 4: start.Add(-time.Second)}}
		n.awaitRoom(context.Background(), []fault{{kind: majorityAmnesia, node: 2}, {kind: majorityAmnesia, node: 3}, {kind: majorityAmnesia, node: 4}})
		assert.Equal(t, 3*time.Second, time.Since(start))
	})
}

// Every run's first round is the majority-amnesia round, and every cycle
// has it once; a run without it (fencing, clusters) never plays it.
func TestPlanBeginsWithTheMajorityAmnesiaRound(t *testing.T) {
	names := func(rs []round) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.name)
		}
		return out
	}
	for seed := range uint64(20) {
		n := &nemesis{rng: rand.New(rand.NewPCG(seed, 0)), majority: true}
		rs := n.rounds()
		first := names(n.plan(rs, true))
		assert.Equal(t, majorityAmnesia, first[0], "seed %d", seed)
		assert.ElementsMatch(t, names(rs), first, "a cycle plays every round once")
		for range 5 {
			assert.Equal(t, 1, countOf(names(n.plan(rs, false)), majorityAmnesia))
		}
	}
	n := &nemesis{rng: rand.New(rand.NewPCG(1, 0))}
	assert.NotContains(t, names(n.plan(n.rounds(), true)), majorityAmnesia)
	assert.Len(t, n.rounds(), 11)
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

// fakeHolder answers the nemesis' amnesia requests as the holder does:
// ready (nil) or why not, then, after the restart and the linger, the
// workloads still valid.
func fakeHolder(ctx context.Context, reqs <-chan amnesia, ready func(i int) error, valid []Workload) {
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case req := <-reqs:
			if err := ready(i); err != nil {
				req.ready <- err
				continue
			}
			req.ready <- nil
			<-req.restarted
			time.Sleep(victimLinger)
			req.held <- holderReport{valid: valid, probes: []probe{{workload: Exclusive, err: errors.New("refused")}}}
		}
	}
}

func TestMajorityAmnesiaRound(t *testing.T) {
	every := []Workload{Exclusive, Multi, RW, Permits}
	newNemesis := func(reqs chan amnesia, restarted *[][]int) *nemesis {
		return &nemesis{victim: reqs, workloads: every, amnesia: &amnesiaLog{}, settle: 10 * time.Second,
			faults: &faultLog{}, logf: t.Logf, restartHook: func(nodes []int) error {
				*restarted = append(*restarted, nodes)
				time.Sleep(2 * time.Second) // kill and start
				return nil
			}}
	}
	t.Run("counted: the nodes stay out for the quarantine", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reqs := make(chan amnesia)
			var restarted [][]int
			n := newNemesis(reqs, &restarted)
			go fakeHolder(ctx, reqs, func(int) error { return nil }, every)
			start := time.Now()
			assert.NoError(t, n.playMajority(ctx, []int{2, 3, 4}, amnesiaAttempts))
			assert.Equal(t, [][]int{{2, 3, 4}}, restarted)
			assert.Equal(t, 2*time.Second+victimLinger, time.Since(start), "the round ends after the holder's linger")
			back := start.Add(2 * time.Second)
			assert.Equal(t, map[int]time.Time{2: back.Add(10 * time.Second), 3: back.Add(10 * time.Second), 4: back.Add(10 * time.Second)}, n.outUntil)
			assert.Equal(t, map[string]int{majorityAmnesia: 3}, n.faults.snapshot())
			r := n.amnesia.report(start, []Hold{{Workload: RW, Start: back.Add(9 * time.Second)}, {Workload: RW, Start: back.Add(11 * time.Second)}})
			assert.Equal(t, AmnesiaReport{Rounds: 1, SlowestRestart: 2 * time.Second, QuarantineEnd: 12 * time.Second,
				HoldsAfter: map[Workload]int{RW: 1}}, r)

			// The next round, even one of latency alone, waits out the
			// quarantine and the recovery window after it.
			n.awaitRoom(ctx, []fault{{kind: latency, node: 0}})
			assert.Equal(t, back.Add(10*time.Second+recoverWindow), time.Now())
		})
	})
	t.Run("not counted: a claim ran out before the nodes were back", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reqs := make(chan amnesia)
			var restarted [][]int
			n := newNemesis(reqs, &restarted)
			go fakeHolder(ctx, reqs, func(int) error { return nil }, []Workload{Exclusive, Multi, RW})
			assert.NoError(t, n.playMajority(ctx, []int{2, 3, 4}, amnesiaAttempts))
			r := n.amnesia.report(time.Now(), nil)
			assert.Equal(t, 0, r.Rounds)
			assert.Equal(t, 1, r.Uncounted)
			assert.Zero(t, r.QuarantineEnd)
		})
	})
	t.Run("the holder is asked again, then the round is skipped", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reqs := make(chan amnesia)
			var restarted [][]int
			n := newNemesis(reqs, &restarted)
			hctx, stop := context.WithCancel(ctx)
			go fakeHolder(hctx, reqs, func(int) error { return errors.New("could not take its permits claim") }, every)
			assert.NoError(t, n.playMajority(ctx, []int{2, 3, 4}, amnesiaAttempts))
			stop()
			assert.Empty(t, restarted, "no node is killed without valid holds")
			assert.Equal(t, AmnesiaReport{Skipped: 1}, n.amnesia.report(time.Now(), nil))

			restarted = nil
			n.amnesia = &amnesiaLog{}
			go fakeHolder(ctx, reqs, func(i int) error {
				if i < 2 {
					return errors.New("busy")
				}
				return nil
			}, every)
			assert.NoError(t, n.playMajority(ctx, []int{2, 3, 4}, amnesiaAttempts))
			assert.Len(t, restarted, 1, "the third attempt plays")
		})
	})
	t.Run("the run's first round asks until the holder is ready", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			reqs := make(chan amnesia)
			var restarted [][]int
			n := newNemesis(reqs, &restarted)
			go fakeHolder(ctx, reqs, func(i int) error {
				if i < 7 {
					return errors.New("could not take its rw claim")
				}
				return nil
			}, every)
			start := time.Now()
			assert.NoError(t, n.playMajority(ctx, []int{2, 3, 4}, 0))
			assert.Len(t, restarted, 1)
			assert.Equal(t, 7*time.Second+2*time.Second+victimLinger, time.Since(start), "seven refusals a second apart")
			assert.Equal(t, 1, n.amnesia.report(start, nil).Rounds)
		})
	})
	t.Run("the end of the run stops the request", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			var restarted [][]int
			n := newNemesis(make(chan amnesia), &restarted) // nobody answers
			assert.NoError(t, n.playMajority(ctx, []int{2, 3, 4}, 0))
			assert.Empty(t, restarted)
			assert.Equal(t, AmnesiaReport{}, n.amnesia.report(time.Now(), nil), "not skipped: the run ended")
		})
	})
}

// The prober retries until every node answered: a refusal that counted no
// restarted node's answer proves nothing about the quarantine.
func TestDecisive(t *testing.T) {
	quorum := func(errs ...error) error {
		qe := &redlock.QuorumError{Op: "lock", Needed: 3, Total: 5}
		for i, err := range errs {
			qe.Nodes = append(qe.Nodes, &redlock.NodeError{Node: i, Err: err})
		}
		return qe
	}
	q := fmt.Errorf("run x started 1s ago: %w", redlock.ErrNodeQuarantined)
	assert.True(t, decisive(nil), "got in")
	assert.True(t, decisive(quorum(redlock.ErrTaken, redlock.ErrTaken, q, q, q)))
	assert.True(t, decisive(quorum(redlock.ErrPending, redlock.ErrPending, q, q, q)), "three refusals left no majority")
	assert.False(t, decisive(quorum(redlock.ErrPending, redlock.ErrPending, redlock.ErrPending, q, redlock.ErrTaken)),
		"the restarted nodes had not answered yet")
	assert.False(t, decisive(quorum(redlock.ErrTaken, q, errors.New("connection refused"), redlock.ErrPending, redlock.ErrPending)))
	assert.False(t, decisive(context.DeadlineExceeded))
}
