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
// answer: asked of the frozen master, it used to hold every key of the
// cluster for 5s or more. A Pool bounds that question (1s), so a write on
// another master's key succeeds within a few node calls.
func TestFromURLClusterNewWhileAMasterIsFrozen(t *testing.T) {
	cl := redistest.StartCluster(t, 3, redistest.NoPersistence)
	cl.Masters[0].Pause()
	t.Cleanup(cl.Masters[0].Resume)
	key := "frozen-test:0"
	for i := 0; cl.MasterOf(key) == cl.Masters[0]; i++ {
		key = "frozen-test:" + string(rune('a'+i))
	}
	addrs := cl.Addrs()
	// Each new client asks a random master first: eight make the frozen
	// one's turn near certain (1 - (2/3)^8).
	for i := range 8 {
		p, err := pool.FromURL("redis+cluster://" + addrs[0] + "?addr=" + strings.Join(addrs[1:], "&addr="))
		require.NoError(t, err)
		begun := time.Now()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			_, err := p.SetNX(ctx, key, "v", time.Second)
			cancel()
			if err == nil {
				break
			}
			require.Less(t, time.Since(begun), 10*time.Second, "pool %d: %v", i, err)
		}
		took := time.Since(begun)
		// Bounded: a first slot-map read that asked the frozen master
		// fails its call, and COMMAND holds the others commandInfoTimeout
		// (1s); unbounded, it held them 5s.
		assert.Less(t, took, 4*time.Second, "pool %d: the first write on a live master took %v", i, took)
		require.NoError(t, p.Close())
	}
}
