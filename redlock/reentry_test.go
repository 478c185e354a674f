package redlock_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// WithOwner's combinations that are refused, each before any node is
// called, with the error that says why.
func TestOwnerRefusedCombinations(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	job := redlock.WithOwner("job")
	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"empty owner", func() error {
			_, err := c.TryLock(bg(), "k", time.Second, redlock.WithOwner(""))
			return err
		}, "redlock: empty owner"},
		{"fairness", func() error {
			_, err := c.Lock(bg(), "k", time.Second, job, redlock.WithFairness())
			return err
		}, "redlock: WithFairness cannot be combined with WithOwner"},
		{"heal", func() error {
			_, err := c.TryLock(bg(), "k", time.Second, job, redlock.WithRepairOnExtend())
			return err
		}, "redlock: WithRepairOnExtend cannot be combined with WithOwner"},
		{"reader", func() error {
			_, err := c.TryRLock(bg(), "k", time.Second, job)
			return err
		}, "redlock: WithOwner applies to Lock, TryLock and Do only"},
		{"permit", func() error {
			_, err := c.TryAcquirePermit(bg(), "k", 2, time.Second, job)
			return err
		}, "redlock: WithOwner applies to Lock, TryLock and Do only"},
		{"multi-lock", func() error {
			_, err := c.TryLockAll(bg(), []string{"k", "l"}, time.Second, job)
			return err
		}, "redlock: WithOwner applies to Lock, TryLock and Do only"},
		{"resume with an owner", func() error {
			_, err := c.Resume(bg(), "k", "TOKEN", time.Second, job)
			return err
		}, "redlock: an owner's holds cannot be resumed"},
		{"resume of an owner's value", func() error {
			_, err := c.Resume(bg(), "k", "o:job", time.Second)
			return err
		}, "redlock: an owner's holds cannot be resumed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.EqualError(t, tc.call(), tc.want)
		})
	}
	c.WaitIdle()
	for _, s := range fn.servers {
		assert.Empty(t, s.Keys(), "no node was written")
	}
}
