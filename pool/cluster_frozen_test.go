package pool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// TestFromURLClusterNewWhileAMasterIsFrozen makes new cluster Pools while
// one master of the cluster is frozen (SIGSTOP). go-redis learns the
// commands' key positions from COMMAND, asked of a random master on a
// client's first command, and every command of that client waits for the
// answer, whatever its context says: asked of the frozen master, it used to
// hold every key of the cluster for 5s. A Pool bounds that question (1s),
// so a write on another master's key ends within its own deadline (500ms
// here) and that bound, and a later one succeeds.
//
// What is bounded is each call. The number of calls is not: a call can
// also fail at its own deadline when go-redis's first read of the slot map
// asks the frozen master (one chance in three per call), so the time to
// the first write is a run of such 500ms failures. Under two CPU hogs one
// took 5.02s in 8 pools of a loaded make test run, where the test asserted
// the total under 4s.
func TestFromURLClusterNewWhileAMasterIsFrozen(t *testing.T) {
	cl := redistest.StartCluster(t, 3, redistest.NoPersistence)
	cl.Masters[0].Pause()
	t.Cleanup(cl.Masters[0].Resume)
	key := "frozen-test:0"
	for i := 0; cl.MasterOf(key) == cl.Masters[0]; i++ {
		key = "frozen-test:" + string(rune('a'+i))
	}
	addrs := cl.Addrs()
	const deadline = 500 * time.Millisecond
	// Each new client asks a random master first: eight make the frozen
	// one's turn near certain (1 - (2/3)^8).
	for i := range 8 {
		p, err := pool.FromURL("redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr="))
		require.NoError(t, err)
		begun := time.Now()
		var longest time.Duration
		for {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			called := time.Now()
			_, err := p.SetNX(ctx, key, "v", time.Second)
			longest = max(longest, time.Since(called))
			cancel()
			if err == nil {
				break
			}
			require.Less(t, time.Since(begun), 20*time.Second, "pool %d: no write on a live master: %v", i, err)
		}
		// Bounded: the call's deadline plus COMMAND's bound (1.5s), with
		// 1.5s to spare for a loaded machine; unbounded, COMMAND alone
		// held a call 5s.
		assert.Less(t, longest, 3*time.Second,
			"pool %d: a call with a %v deadline took %v (the first write %v after the first call)", i, deadline, longest, time.Since(begun))
		require.NoError(t, p.Close())
	}
}
