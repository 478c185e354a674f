package redlocktest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlocktest"
)

// refused checks that node i refuses connections: Status, the next call,
// reports it with ECONNREFUSED (the connections Stop broke are not reused),
// and so do the calls after it, more than a go-redis pool's size: enough
// that go-redis would stop dialing the node for a while if the kit let
// its dials fail (see TestStopStart, which wants the node back at Start).
func refused(t *testing.T, c *redlock.Client, i int) {
	t.Helper()
	for range 100 {
		st, _ := c.Status(context.Background(), "any")
		if err := st.Nodes[i].Err; !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("node %d: Status error %v, want ECONNREFUSED", i, err)
		}
	}
}

func TestStopStart(t *testing.T) {
	bothClocks(t, func(t *testing.T, bubble bool) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		a, b := nodes.Client(), nodes.Client()
		addr := nodes.Pools()[0].Addr()

		kept, err := a.TryLock(ctx, "kept", 2*time.Second, redlock.WithAutoExtend(0))
		if err != nil {
			t.Fatal(err)
		}
		held, err := a.TryLock(ctx, "held", time.Minute)
		if err != nil {
			t.Fatal(err)
		}

		everywhere(t, nodes, "held", true, bubble)
		nodes.Stop(0)
		nodes.Stop(0) // a no-op
		refused(t, b, 0)
		l, err := b.TryLock(ctx, "one-down", time.Minute)
		if err != nil {
			t.Fatalf("a majority is up, TryLock: %v", err)
		}
		unlock(t, l)

		nodes.Stop(1)
		refused(t, b, 1)
		_, err = b.TryLock(ctx, "two-down", time.Minute)
		var qe *redlock.QuorumError
		if !errors.As(err, &qe) || !errors.Is(err, syscall.ECONNREFUSED) {
			t.Fatalf("two of three down: TryLock = %v, want a QuorumError with ECONNREFUSED", err)
		}
		wantLost(t, kept)

		nodes.Start(0)
		nodes.Start(0) // a no-op
		if st, err := b.Status(ctx, "any"); err != nil || st.Nodes[0].Err != nil {
			t.Fatalf("node 0 not back at once after Start: %v, %+v", err, st.Nodes[0])
		}
		if got := nodes.Pools()[0].Addr(); got != addr {
			t.Fatalf("address after Start: %q, want %q", got, addr)
		}
		// Node 0 kept "held": with node 1 down, the key is held on 0 and 2.
		st, err := b.Status(ctx, "held")
		if err != nil {
			t.Fatal(err)
		}
		if !st.Held || st.Token != held.Token() || st.Nodes[0].Token != held.Token() {
			t.Fatalf("after Start: Status %+v, want held by %s on node 0", st, held.Token())
		}
		nodes.Start(1)
		unlock(t, held)
	})
}

// exists is EXISTS as a script, to read a node through its Pool.
var exists = pool.NewScript("return redis.call('EXISTS', KEYS[1])")

// everywhere waits until key exists (held) or is absent on every node that
// is up, whatever the kind of hold. A call returns at the majority: the
// last node's command may still be on its way, and would land after a
// Stop, a Start, an Expire or an Unlock that the test makes meanwhile. In
// a bubble, synctest.Wait says when it landed; on the real clock the nodes
// do.
func everywhere(t *testing.T, nodes *redlocktest.Nodes, key string, held, bubble bool) {
	t.Helper()
	if bubble {
		synctest.Wait()
	}
	want := int64(0)
	if held {
		want = 1
	}
	for deadline := time.Now().Add(liveness); time.Now().Before(deadline); {
		settled := true
		for _, p := range nodes.Pools() {
			v, err := p.Eval(context.Background(), exists, []string{key})
			if err == nil && v != want || err != nil && !errors.Is(err, syscall.ECONNREFUSED) {
				settled = false
			}
		}
		if settled {
			return
		}
	}
	t.Fatalf("%s: exists %v not on every node within %v", key, held, liveness)
}

// TestExpireStoppedNode: Expire reaches a node that is down; it comes back
// without the hold.
func TestExpireStoppedNode(t *testing.T) {
	bothClocks(t, func(t *testing.T, bubble bool) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 3)
		c := nodes.Client()
		if _, err := c.TryLock(ctx, "k", time.Minute); err != nil {
			t.Fatal(err)
		}
		everywhere(t, nodes, "k", true, bubble)
		nodes.Stop(2)
		nodes.Expire("k")
		nodes.Start(2)
		st, err := c.Status(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range st.Nodes {
			if n.Token != "" || n.Err != nil {
				t.Fatalf("node %d after Expire: token %q, error %v; want free", n.Node, n.Token, n.Err)
			}
		}
	})
}

// fatalTB records the first Fatalf and ends the calling goroutine, as
// testing.T does; every other method is the real test's.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatal runs f with a fatalTB in a goroutine of its own and returns the
// message of its Fatalf, "" if none.
func fatal(t *testing.T, f func(tb testing.TB)) string {
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(tb)
	}()
	<-done
	return tb.msg
}

func TestBadInput(t *testing.T) {
	nodes := redlocktest.New(t, 3)
	for _, tc := range []struct {
		name string
		call func(tb testing.TB)
		want string
	}{
		{name: "no nodes", call: func(tb testing.TB) { redlocktest.New(tb, 0) }, want: "at least 1, got 0"},
		{name: "negative nodes", call: func(tb testing.TB) { redlocktest.New(tb, -2) }, want: "got -2"},
		{name: "Stop below", call: func(tb testing.TB) { redlocktest.New(tb, 3).Stop(-1) }, want: "Stop(-1): no such node, the nodes are 0 to 2"},
		{name: "Start above", call: func(tb testing.TB) { redlocktest.New(tb, 3).Start(3) }, want: "Start(3): no such node"},
		{name: "refused option", call: func(tb testing.TB) { redlocktest.New(tb, 3).Client(redlock.WithNodeTimeout(-1)) }, want: "redlocktest: Client: redlock: "},
		{name: "valid", call: func(tb testing.TB) {
			n := redlocktest.New(tb, 1)
			n.Stop(0)
			n.Start(0)
			n.Client()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fatal(t, tc.call)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Fatalf("Fatalf(%q), want one containing %q", got, tc.want)
			}
		})
	}
	if _, err := nodes.Client().TryLock(context.Background(), "k", time.Minute); err != nil {
		t.Fatalf("the Nodes of the test still work: %v", err)
	}
}

// TestNoGoroutineAfterCleanup: once a test's cleanup ran, nothing it
// started through the kit is left, whatever state it left its locks in.
func TestNoGoroutineAfterCleanup(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Run("busy", func(t *testing.T) {
		ctx := context.Background()
		nodes := redlocktest.New(t, 5)
		a, b := nodes.Client(), nodes.Client()
		if _, err := a.TryLock(ctx, "kept", 2*time.Second, redlock.WithAutoExtend(0)); err != nil {
			t.Fatal(err)
		}
		if _, err := a.TryRLock(ctx, "read", time.Minute); err != nil {
			t.Fatal(err)
		}
		held, err := a.TryLock(ctx, "held", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		// Before a waiter comes, whose try on arrival could win a node that
		// held's late command had not reached yet.
		everywhere(t, nodes, "held", true, false)
		waiter := async(func() error {
			_, err := b.Lock(ctx, "held", time.Minute) // left held at cleanup
			return err
		})
		nodes.Stop(4)
		nodes.Expire("read")
		// What this test needs of the release is the hand-off to the
		// waiter, which await checks within liveness, far inside held's
		// minute. An Unlock that timed out on some nodes is no failure of
		// it: once, inside a loaded make test, three in-memory nodes did not
		// answer within a minute-long lock's 500ms node timeout, while their releases ran on in the
		// background (redlock.WithNodeTimeout) and can still hand the lock
		// over. An error without a timeout in it is.
		if err := held.Unlock(ctx); errors.Is(err, redlock.ErrNodeTimeout) {
			t.Logf("Unlock held, still handing over in the background: %v", err)
		} else if err != nil {
			t.Fatalf("Unlock held: %v", err)
		}
		if err := await(t, "Lock", waiter); err != nil {
			t.Fatal(err)
		}
		// A Lock still waiting when the test ends: its owner is the Client,
		// whose Close at cleanup ends it (goleak above checks that it did).
		go func() { _, _ = a.Lock(context.Background(), "held", time.Minute) }()
	})
}

// TestClientDefaults: a kit Client has the library's defaults, which admit
// a 1s TTL kept alive, and the caller's WithNodeTimeout applies as given.
func TestClientDefaults(t *testing.T) {
	ctx := context.Background()
	nodes := redlocktest.New(t, 3)
	l, err := nodes.Client().TryLock(ctx, "k", time.Second, redlock.WithAutoExtend(0))
	if err != nil {
		t.Fatalf("a 1s TTL kept alive with the default node timeout: %v", err)
	}
	unlock(t, l)
	_, err = nodes.Client(redlock.WithNodeTimeout(500*time.Millisecond)).TryLock(ctx, "k", time.Second, redlock.WithAutoExtend(0))
	if err == nil {
		t.Fatal("a 1s TTL kept alive with a 500ms node timeout was accepted: the option was not applied")
	}
}
