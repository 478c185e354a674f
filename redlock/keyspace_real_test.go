package redlock_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/redlock"
)

// libraryNames returns names the library writes on a node: the companions
// of keys of every shape in both namings (a standalone node's, a Redis
// Cluster node's), the election keys, their records, and the markers.
func libraryNames() []string {
	var out []string
	for _, b := range []string{"k", "{t}k", "a}b", "election:x", "election:{t}x"} {
		for _, n := range []keyspace.Naming{keyspace.Standalone{}, keyspace.Cluster{}} {
			out = append(out, n.Fence(b), n.Readers(b), n.Held(b), n.Watch(b), n.Holds(b), n.Leader(b))
			out = append(out, n.Queue(b)[1:]...)
		}
	}
	return append(out, "election:x", "election:{t}x", keyspace.FreshStart, keyspace.ShardFreshStart("0"), keyspace.Reign("0"))
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
	campaigned := 0
	for _, name := range names {
		election, ok := strings.CutPrefix(name, keyspace.ElectionPrefix)
		if !ok || name == "election:x" || name == "election:{t}x" {
			continue // an election's own key is reached by its own Campaign only
		}
		_, err := c.Campaign(ctx, election, "v", ttl)
		require.Error(t, err, "Campaign(%q) reaches %q", election, name)
		assert.Contains(t, err.Error(), "reserved")
		_, err = c.Leader(ctx, election)
		assert.Contains(t, err.Error(), "reserved", "Leader(%q)", election)
		campaigned++
	}
	require.Greater(t, campaigned, 10, "election names that would reach an election's record or companions")
	c.WaitIdle()
	for _, s := range servers {
		keys, err := s.Client(t).Keys(bg(), "*").Result()
		require.NoError(t, err)
		keys = slices.DeleteFunc(keys, func(k string) bool { return k == keyspace.FreshStart }) // the harness's declaration
		assert.Empty(t, keys, "nothing written on %s", s.Addr())
	}
}

// The probe's two leaders: election "x" keeps its record at
// "election:x:leader", the lock key of an election "x:leader". That name is
// refused, so while x is led nothing else can touch its record, and
// Campaign "x" after a refused Campaign "x:leader" leads alone.
func TestRealElectionRecordIsNoElection(t *testing.T) {
	parallel(t)
	_, pools := realNodes(t, 3)
	c := newClient(t, pools)
	_, err := c.Campaign(bg(), "x:leader", "b", 5*time.Second)
	require.Error(t, err)
	a, err := c.Campaign(bg(), "x", "a", 5*time.Second)
	require.NoError(t, err)
	_, err = c.TryLock(bg(), "election:x:leader", time.Second)
	require.Error(t, err, "the record is no caller's lock key")
	_, err = c.TryLock(bg(), "election:x", time.Second)
	require.Error(t, err, "nor is the election's key")
	ld, err := c.Leader(bg(), "x")
	require.NoError(t, err)
	assert.Equal(t, "a", ld.Value)
	require.NoError(t, a.Resign(bg()))
}
