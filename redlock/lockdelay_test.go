package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

func TestWithLockDelayValidates(t *testing.T) {
	pools := newFakeNodes(t, 1).pools
	for _, tc := range []struct {
		name string
		d    time.Duration
		ok   bool
	}{
		{"zero", 0, false},
		{"negative", -time.Second, false},
		{"under a millisecond", 500 * time.Microsecond, false},
		{"beyond MaxTTL", redlock.MaxTTL + time.Millisecond, false},
		{"one millisecond", time.Millisecond, true},
		{"MaxTTL", redlock.MaxTTL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := redlock.New(pools, redlock.WithLockDelay(tc.d))
			if !tc.ok {
				require.ErrorContains(t, err, "lock delay must be between 1ms and")
				require.Nil(t, c)
				return
			}
			require.NoError(t, err)
			require.NoError(t, c.Close())
		})
	}
}
