package redlock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/redlock"
)

// A hold taken by one Client is carried on by another (a process that
// restarted, or the command of redlock run) with its token: no new hold,
// the TTL reset from the call's start, and an Unlock of either releases it.
func TestRealResumeCarriesOnAHold(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	a := newClient(t, pools)
	la, err := a.TryLock(bg(), "job", 2*time.Second)
	require.NoError(t, err)
	a.WaitIdle()

	b := newClient(t, pools)
	start := time.Now()
	lb, err := b.Resume(bg(), "job", la.Token(), 10*time.Second)
	require.NoError(t, err)
	assert.Equal(t, la.Token(), lb.Token(), "no new hold: the same token")
	assert.True(t, lb.Until().After(start.Add(9*time.Second)), "validity from the call's start: %v", lb.Until())
	b.WaitIdle()
	assert.Equal(t, 5, realHolders(t, servers, "job", la.Token()))
	for _, s := range servers {
		ttl, err := s.Client(t).PTTL(bg(), "job").Result()
		require.NoError(t, err)
		// Above the first hold's 2s, which is all it could have left: reset.
		assert.Greater(t, ttl, 2*time.Second, "the TTL was reset on %s", s.Addr())
	}
	_, err = a.TryLock(bg(), "job", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "still one hold")
	releasedOrLate(t, lb.Unlock(bg()), "lb's Unlock")
	b.WaitIdle()
	assert.Zero(t, realHolders(t, servers, "job", la.Token()), "released by the resumed Lock")
	require.ErrorIs(t, la.Unlock(bg()), redlock.ErrNotHeld, "the first handle finds it gone")
}

// Resume never creates a hold: not with a token that holds nothing, not
// after the hold expired, not over another owner's.
func TestRealResumeCreatesNothing(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 5)
	a := newClient(t, pools)
	b := newClient(t, pools)

	_, err := b.Resume(bg(), "free", "NOSUCHTOKEN", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
	for _, s := range servers {
		assert.Zero(t, s.Client(t).Exists(bg(), "free").Val(), "nothing written on %s", s.Addr())
	}

	// A 1s hold: a parallel test's TryLock took 151ms under the package's
	// own load, past a 100ms TTL's validity.
	expired, err := a.TryLock(bg(), "gone", time.Second)
	require.NoError(t, err)
	time.Sleep(time.Until(expired.Until()) + 150*time.Millisecond)
	_, err = b.Resume(bg(), "gone", expired.Token(), time.Second)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
	for _, s := range servers {
		assert.Zero(t, s.Client(t).Exists(bg(), "gone").Val(), "an expired hold is not re-created on %s", s.Addr())
	}

	other, err := a.TryLock(bg(), "taken", 10*time.Second)
	require.NoError(t, err)
	_, err = b.Resume(bg(), "taken", "NOTTHEOWNER", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.NoError(t, other.Extend(bg(), 10*time.Second), "the owner's hold is untouched")

	_, err = b.Resume(bg(), "taken", "", time.Second)
	require.EqualError(t, err, "redlock: empty token")
}

// A fenced hold resumed WithFencing gets a fence greater than its own, and
// WithAutoExtend keeps the resumed Lock alive.
func TestRealResumeFencedAndKept(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 5)
	a := newClient(t, pools)
	la, err := a.TryLock(bg(), "fenced", 2*time.Second, redlock.WithFencing())
	require.NoError(t, err)
	// A 250ms node timeout: with the suite's 1s, the loss margin (2 node
	// timeouts) left the keeper about 600ms after its first extension's
	// due time; it is about 2.1s now (see docs/testing.md).
	b := newClient(t, pools, redlock.WithNodeTimeout(250*time.Millisecond))
	lb, err := b.Resume(bg(), "fenced", la.Token(), 4*time.Second, redlock.WithFencing(), redlock.WithAutoExtend(0))
	require.NoError(t, err)
	assert.Greater(t, lb.Fence(), la.Fence())
	first := lb.Until()
	// The keeper must extend before the Lock's validity ends, or it is
	// lost: that is the bound.
	redistest.WaitFor(t, time.Until(first), "the keeper to extend the resumed Lock", func() (bool, string) {
		return lb.Until().After(first), fmt.Sprintf("Until %v, Err %v", lb.Until().Sub(first), lb.Err())
	})
	require.NoError(t, lb.Err())
	require.NoError(t, lb.Unlock(context.Background()))
	next, err := a.TryLock(bg(), "fenced", time.Second, redlock.WithFencing())
	require.NoError(t, err)
	assert.Greater(t, next.Fence(), lb.Fence(), "a later holder's fence is greater still")
}

// Resume of one key of a multi-lock with the multi-lock's token would split
// it (on dd8673a it succeeded, and after its Unlock the multi-lock could no
// longer extend): it is refused with ErrWrongKind, no node called, and the
// multi-lock is whole.
func TestRealResumeRefusesAMultiLockToken(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	c := newClient(t, pools)
	m, err := c.TryLockAll(bg(), []string{"rm1", "rm2"}, 5*time.Second)
	require.NoError(t, err)
	_, err = c.Resume(bg(), "rm1", m.Token(), 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrWrongKind)
	assert.Contains(t, err.Error(), "multi-lock")
	require.NoError(t, m.Extend(bg(), 5*time.Second), "the multi-lock is whole")
	releasedOrLate(t, m.Unlock(bg()), "m's Unlock")
	c.WaitIdle()
	for _, s := range servers {
		n, err := s.Client(t).Exists(bg(), "rm1", "rm2").Result()
		require.NoError(t, err)
		assert.Zero(t, n)
	}
}

// Resume on a key that holds permits or readers answers that the token is
// not an exclusive lock's (ErrWrongKind, ErrNotHeld), never a timeout (on
// dd8673a: ErrNotExtended wrapping raw WRONGTYPE errors, which callers retry
// on).
func TestRealResumeOnAnotherKind(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	c := newClient(t, pools)
	p, err := c.TryAcquirePermit(bg(), "sem", 2, 5*time.Second)
	require.NoError(t, err)
	_, err = c.Resume(bg(), "sem", p.Token(), 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrWrongKind)
	assert.NotErrorIs(t, err, redlock.ErrNotExtended)
	assert.NotContains(t, err.Error(), "WRONGTYPE")
	releasedOrLate(t, p.Unlock(bg()), "p's Unlock")

	r, err := c.TryRLock(bg(), "rw", 5*time.Second)
	require.NoError(t, err)
	_, err = c.Resume(bg(), "rw", r.Token(), 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
	assert.NotErrorIs(t, err, redlock.ErrNotExtended)
	releasedOrLate(t, r.Unlock(bg()), "r's Unlock")
}

// A Resume, and every extension through either handle of a token, never
// shortens the key's TTL below what the other handle counts on (on
// cfb0d9a, Resume(key, token, 1s) set a kept 30s lock's keys to 1s, and a
// third Client took the key with 28s of the first handle's validity left):
// the extension keeps the longer of its TTL and the key's. In every mode an
// exclusive lock is resumed in: plain, fenced, under a lock-delay (whose
// holder marker must outlive the key by the delay). The checks read the
// nodes' TTLs once every node answered (WaitIdle), so no timing decides.
func TestRealResumeNeverShortensTheHoldersLease(t *testing.T) {
	parallel(t)
	for _, tc := range []struct {
		name  string
		delay time.Duration // the Clients' WithLockDelay
		lopts []redlock.LockOption
	}{
		{name: "plain"},
		{name: "fenced", lopts: []redlock.LockOption{redlock.WithFencing()}},
		{name: "lock-delay", delay: 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			servers, pools := realNodes(t, 3)
			var copts []redlock.Option
			if tc.delay > 0 {
				copts = append(copts, redlock.WithLockDelay(tc.delay))
			}
			a := newPatientClient(t, pools, copts...)
			b := newPatientClient(t, pools, copts...)
			key := "resume-lease-" + tc.name
			held := retryUnanswered(t, a, "the holder's lock", 3, func() (*redlock.Lock, error) {
				return a.TryLock(bg(), key, 30*time.Second, tc.lopts...)
			})
			a.WaitIdle()

			// 5s, short beside the holder's 30s, and long enough that the
			// handle is still valid for its Extend on a loaded machine (a
			// 1s handle had run out 210ms before it).
			short, err := b.Resume(bg(), key, held.Token(), 5*time.Second, tc.lopts...)
			require.NoError(t, err)
			b.WaitIdle()
			leaseOutlives(t, servers, key, held, tc.delay)
			require.NoError(t, short.Extend(bg(), 5*time.Second), "the resumed handle extends")
			b.WaitIdle()
			leaseOutlives(t, servers, key, held, tc.delay)

			// The other way round: the first handle's shorter extension
			// keeps the resumed handle's longer lease.
			long, err := b.Resume(bg(), key, held.Token(), time.Minute, tc.lopts...)
			require.NoError(t, err)
			b.WaitIdle()
			require.NoError(t, held.Extend(bg(), 30*time.Second))
			a.WaitIdle()
			leaseOutlives(t, servers, key, long, tc.delay)
			leaseOutlives(t, servers, key, held, tc.delay)

			_, err = newClient(t, pools, copts...).TryLock(bg(), key, time.Second)
			require.ErrorIs(t, err, redlock.ErrNotObtained, "one hold, still valid")
			releasedOrLate(t, long.Unlock(bg()), "the resumed Lock's Unlock")
		})
	}
}

// leaseOutlives checks that key outlives l's validity on every node, and
// under a lock-delay (delay > 0) that its holder marker outlives it by the
// delay: l's holder counts on no more than the nodes keep.
func leaseOutlives(t *testing.T, servers []*redistest.Server, key string, l *redlock.Lock, delay time.Duration) {
	t.Helper()
	for _, s := range servers {
		c := s.Client(t)
		// The node's TTL is read before left, which counts down from a
		// later instant: TTL >= left means the key ends no earlier,
		// however long the two reads are apart.
		ttl, err := c.PTTL(bg(), key).Result()
		require.NoError(t, err)
		left := time.Until(l.Until())
		assert.GreaterOrEqual(t, ttl, left, "the key's TTL on %s against the holder's validity", s.Addr())
		if delay > 0 {
			marker, err := c.PTTL(bg(), heldKey(key)).Result()
			require.NoError(t, err)
			left := time.Until(l.Until())
			assert.GreaterOrEqual(t, marker, left+delay, "the holder marker's TTL on %s", s.Addr())
		}
	}
}

// Resume takes only a key whose value is an exclusive lock's token, checked
// by the script that extends, in the step that reads the value: never the
// readers' marker (on 4e8930b, Resume(key, "r:readers") on a key held by a
// reader succeeded, its Unlock deleted the marker, and a writer took the
// key with 30s of the reader's lease left), nor a value of the
// application's, whose key it would have given a TTL.
func TestRealResumeRefusesAReadersMarker(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	c := newClient(t, pools)
	reader := retryUnanswered(t, c, "the reader's lease", 3, func() (*redlock.Lock, error) {
		return c.TryRLock(bg(), "resume-readers", 30*time.Second)
	})
	c.WaitIdle()

	b := newClient(t, pools)
	_, err := b.Resume(bg(), "resume-readers", "r:readers", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
	b.WaitIdle()
	assert.Equal(t, 3, realHolders(t, servers, "resume-readers", "r:readers"), "the readers' marker is untouched")
	leaseOutlives(t, servers, "resume-readers", reader, 0)
	_, err = b.TryLock(bg(), "resume-readers", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "no writer beside the reader")
	releasedOrLate(t, reader.Unlock(bg()), "the reader's Unlock")

	for _, s := range servers {
		require.NoError(t, s.Client(t).Set(bg(), "resume-app", "not a token", 0).Err())
	}
	_, err = b.Resume(bg(), "resume-app", "not a token", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotHeld)
	b.WaitIdle()
	for _, s := range servers {
		ttl, err := s.Client(t).PTTL(bg(), "resume-app").Result()
		require.NoError(t, err)
		assert.Equal(t, time.Duration(-1), ttl, "the application's key keeps no TTL on %s", s.Addr())
	}
}
