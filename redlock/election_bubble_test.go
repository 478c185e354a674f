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

// Campaign blocks until the caller leads, its context ends or the Client
// closes: a campaign whose lock was won but whose leader record reached
// only a minority (three of five nodes fail their first record) gives the
// lock back and campaigns again, rather than returning ErrNotObtained with
// time left.
func TestCampaignAgainWhenTheRecordMissesAMajority(t *testing.T) {
	virtual(t)
	synctest.Test(t, func(t *testing.T) {
		nodes := newBubbleNodes(t, 5)
		pools := append([]pool.Pool(nil), nodes.pools...)
		for i := range 3 {
			f := &failsScript{Pool: pools[i], src: scripts.LeaderSet.Source()}
			f.left.Store(1)
			pools[i] = f
		}
		c := newClient(t, pools)
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		ls, err := c.Campaign(ctx, "e", "me", 5*time.Second)
		require.NoError(t, err, "campaigned again within its context")
		assert.Greater(t, ls.Term(), uint64(1), "the second campaign's term")
		leader, err := c.Leader(t.Context(), "e")
		require.NoError(t, err)
		assert.Equal(t, "me", leader.Value)
		require.NoError(t, ls.Resign(t.Context()))
	})
}
