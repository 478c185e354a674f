package redlock_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/redlock"
)

// libraryNames returns names the library writes on a node: the companions
// of keys of every shape, the election keys and their companions, the CLI's
// holder records, and the markers. All begin with keyspace.Prefix.
func libraryNames() []string {
	var out []string
	for _, b := range []string{"k", "{t}k", "a}b", "x:leader"} {
		e, _ := keyspace.Election(b)
		for _, k := range []string{b, e} {
			n := keyspace.Standalone{}
			out = append(out, n.Fence(k), n.Readers(k), n.Held(k), n.Watch(k), n.Holds(k), n.Leader(k), keyspace.Holder(k))
			out = append(out, n.Queue(k)[1:]...)
		}
		out = append(out, e)
	}
	return append(out, keyspace.FreshStart, keyspace.Ceiling, keyspace.ShardFreshStart("0"), keyspace.Reign("0"))
}

// Every entry point that takes a key or an election name refuses, at the
// call and with an error that says so, every name of the library's own: no
// node is called, so nothing is written anywhere. (On dd8673a TryLock,
// Campaign and Resume took such names: Campaign "x:leader" then Campaign
// "x" gave two valid leaders.)
func TestRealNoEntryPointReachesALibraryName(t *testing.T) {
	parallel(t)
	servers, pools := realNodes(t, 3)
	c := newClient(t, pools)
	ctx, cancel := context.WithTimeout(bg(), 30*time.Second)
	defer cancel()
	const ttl = time.Second
	none := func(context.Context) error { t.Error("fn ran on a reserved key"); return nil }
	entries := map[string]func(key string) error{
		"TryLock":          func(k string) error { _, err := c.TryLock(ctx, k, ttl); return err },
		"Lock":             func(k string) error { _, err := c.Lock(ctx, k, ttl); return err },
		"Do":               func(k string) error { return c.Do(ctx, k, ttl, none) },
		"TryRLock":         func(k string) error { _, err := c.TryRLock(ctx, k, ttl); return err },
		"RLock":            func(k string) error { _, err := c.RLock(ctx, k, ttl); return err },
		"TryAcquirePermit": func(k string) error { _, err := c.TryAcquirePermit(ctx, k, 2, ttl); return err },
		"AcquirePermit":    func(k string) error { _, err := c.AcquirePermit(ctx, k, 2, ttl); return err },
		"TryLockAll":       func(k string) error { _, err := c.TryLockAll(ctx, []string{"ok", k}, ttl); return err },
		"LockAll":          func(k string) error { _, err := c.LockAll(ctx, []string{k, "ok"}, ttl); return err },
		"DoAll":            func(k string) error { return c.DoAll(ctx, []string{k}, ttl, none) },
		"Resume":           func(k string) error { _, err := c.Resume(ctx, k, "TOKEN", ttl); return err },
		"WithOwner":        func(k string) error { _, err := c.TryLock(ctx, k, ttl, redlock.WithOwner("o")); return err },
		"WithOwner Lock":   func(k string) error { _, err := c.Lock(ctx, k, ttl, redlock.WithOwner("o")); return err },
	}
	names := libraryNames()
	for entry, call := range entries {
		for _, name := range names {
			err := call(name)
			require.Error(t, err, "%s(%q)", entry, name)
			assert.NotErrorIs(t, err, redlock.ErrNotObtained, "%s(%q) is refused at the call, not by the nodes", entry, name)
			assert.Contains(t, err.Error(), "reserved", "%s(%q): %v", entry, name, err)
		}
	}
	for _, name := range names {
		_, err := c.Campaign(ctx, name, "v", ttl)
		require.Error(t, err, "Campaign(%q)", name)
		assert.Contains(t, err.Error(), "reserved")
		_, err = c.Leader(ctx, name)
		assert.Contains(t, err.Error(), "reserved", "Leader(%q)", name)
	}
	c.WaitIdle()
	for _, s := range servers {
		keys, err := s.Client(t).Keys(bg(), "*").Result()
		require.NoError(t, err)
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == keyspace.FreshStart }) // the harness's declaration
		assert.Empty(t, keys, "nothing written on %s", s.Addr())
	}
}

// Names are the caller's: every key and election name outside the one
// reserved prefix is accepted, and names that differ are independent
// objects. A lock "x" and a lock "x:leader", an election "x" and an
// election "x:leader", a lock "report" and an election "report" are all
// held at once, and the names a service may well choose (a queue's lock,
// an account's fence) are ordinary keys.
func TestRealOrdinaryNamesAreIndependent(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	c := newClient(t, pools)
	const ttl = 10 * time.Second
	var locks []*redlock.Lock
	for _, key := range []string{"x", "x:leader", "report", "jobs:queue", "acc:fence", "horizon:held",
		"user:1:readers", "election:report", "nightly:holder", "x:queue:watch", "election:x"} {
		l, err := c.TryLock(bg(), key, ttl)
		require.NoError(t, err, "TryLock(%q)", key)
		locks = append(locks, l)
	}
	var leaders []*redlock.Leadership
	for _, name := range []string{"x", "x:leader", "report", "x:election"} {
		ld, err := c.Campaign(bg(), name, "v-"+name, ttl)
		require.NoError(t, err, "Campaign(%q) beside the locks and the other elections", name)
		leaders = append(leaders, ld)
	}
	for _, name := range []string{"x", "x:leader", "report", "x:election"} {
		ld, err := c.Leader(bg(), name)
		require.NoError(t, err)
		assert.Equal(t, "v-"+name, ld.Value, "election %q keeps its own record", name)
	}
	for _, l := range locks {
		require.NoError(t, l.Unlock(bg()))
	}
	for _, ld := range leaders {
		require.NoError(t, ld.Resign(bg()))
	}
	_, err := c.TryLock(bg(), "redlock:x", ttl)
	require.ErrorContains(t, err, `begins with "redlock:"`)
}
