package redlock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// failsScript is a node whose first calls of one script fail, without
// reaching the node; it keeps the identity of the Pool it wraps.
type failsScript struct {
	pool.Pool
	src  string
	left atomic.Int32 // calls of the script still to fail
}

var errInjected = errors.New("connection reset (injected)")

func (f *failsScript) Eval(ctx context.Context, s *pool.Script, keys []string, args ...any) (any, error) {
	if s.Source() == f.src && f.left.Add(-1) >= 0 {
		return nil, errInjected
	}
	return f.Pool.Eval(ctx, s, keys, args...)
}

// Identity implements pool.Identifier.
func (f *failsScript) Identity() (pool.Identity, bool) { return identityOf(f.Pool) }

// campaignWithFailingRecords campaigns over five nodes of which three fail
// their first `fails` leader records, and returns the leadership, which
// Leader reports.
func campaignWithFailingRecords(t *testing.T, fails int32) *redlock.Leadership {
	t.Helper()
	nodes := newBubbleNodes(t, 5)
	pools := append([]pool.Pool(nil), nodes.pools...)
	for i := range 3 {
		f := &failsScript{Pool: pools[i], src: scripts.LeaderSet.Source()}
		f.left.Store(fails)
		pools[i] = f
	}
	c := newClient(t, pools)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ls, err := c.Campaign(ctx, "e", "me", 5*time.Second)
	require.NoError(t, err, "led within its context")
	leader, err := c.Leader(t.Context(), "e")
	require.NoError(t, err)
	assert.Equal(t, "me", leader.Value)
	assert.Equal(t, ls.Term(), leader.Term)
	t.Cleanup(func() { require.NoError(t, ls.Resign(context.Background())) })
	return ls
}

// Campaign blocks until the caller leads, its context ends or the Client
// closes: a campaign whose lock was won but whose leader record reached
// only a minority on every try (three of five nodes fail RecordTries
// records) gives the lock back and campaigns again, rather than returning
// ErrNotObtained with time left.
func TestCampaignAgainWhenTheRecordMissesAMajority(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		ls := campaignWithFailingRecords(t, redlock.RecordTries)
		assert.Greater(t, ls.Term(), uint64(1), "the second campaign's term")
	})
}

// A record that missed a majority once (a lost message) is written again
// under the lock Campaign won, which it keeps: giving it back would hand
// the election to the next campaigner and queue this one behind the rest
// (in the simulation, contenders that each missed once passed the key
// between them for seconds with nobody leading).
func TestCampaignRecordsAgainUnderTheLockItWon(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		ls := campaignWithFailingRecords(t, 1)
		assert.Equal(t, uint64(1), ls.Term(), "the first lock's term: no second campaign")
	})
}
