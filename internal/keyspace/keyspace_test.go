package keyspace_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/keyspace"
)

// bases are keys of every shape the namings treat apart: plain, with a hash
// tag, with a '}' but no tag, with separators and braces inside, and the
// election keys of names of those shapes.
var bases = []string{
	"k", "orders:42", "{orders}:42", "a}b", "{}x", "x{", "x:y:z", "{a}{b}", "q:queue:x", "fence", "leader",
	"election:x", "election:{t}x", "election:a}b", "jobs:queue", "acc:fence", "horizon:held", "user:1:readers",
	"x:leader", "election:report", "nightly:holder", "x:queue:watch",
}

// companions returns every name the library writes beside key, in both
// namings.
func companions(key string) []string {
	var out []string
	for _, n := range []keyspace.Naming{keyspace.Standalone{}, keyspace.Cluster{}} {
		out = append(out, n.Fence(key), n.Readers(key), n.Held(key), n.Watch(key), n.Holds(key), n.Leader(key))
		out = append(out, n.Queue(key)[1:]...)
		out = append(out, keyspace.Holder(key))
	}
	return out
}

// internalNames is every name of the library's own: the companions of every
// base, the markers of a standalone node and of cluster shards, and the
// election keys of the bases.
func internalNames() []string {
	var out []string
	for _, b := range bases {
		out = append(out, companions(b)...)
		if k, err := keyspace.Election(b); err == nil {
			out = append(out, k)
		}
	}
	out = append(out, keyspace.FreshStart, keyspace.Ceiling)
	for _, tag := range []string{"0", "1", "abc"} {
		out = append(out, keyspace.ShardFreshStart(tag), keyspace.Reign(tag))
	}
	return out
}

// TestNoKeyReachesACompanion: every name of the library's own begins with
// the one reserved prefix, which Check refuses, and every other name is a
// caller's: no caller's key can be a name of the library's.
func TestNoKeyReachesACompanion(t *testing.T) {
	for _, name := range internalNames() {
		assert.True(t, strings.HasPrefix(name, keyspace.Prefix), "%q is not under %q", name, keyspace.Prefix)
		err := keyspace.Check(name)
		require.Error(t, err, "Check(%q) must refuse a name of the library's", name)
		assert.ErrorIs(t, err, keyspace.ErrReserved, name)
	}
	for _, b := range bases {
		assert.NoError(t, keyspace.Check(b), "a caller's ordinary key %q", b)
	}
	assert.ErrorIs(t, keyspace.Check("redlock:x"), keyspace.ErrReserved)
	assert.EqualError(t, keyspace.Check(""), "empty key")
}

// TestElectionsAndLocksAreIndependent: an election "x" and an election
// "x:leader", and a lock and an election of one name, share no key.
func TestElectionsAndLocksAreIndependent(t *testing.T) {
	keys := map[string]string{}
	note := func(what, k string) {
		if other, ok := keys[k]; ok && other != what { // the two namings agree
			t.Errorf("%s and %s both use %q", what, other, k)
		}
		keys[k] = what
	}
	for _, name := range []string{"x", "x:leader", "report", "x:election", "{t}x", "a}b"} {
		e, err := keyspace.Election(name)
		require.NoError(t, err, name)
		note("election "+name, e)
		note("lock "+name, name)
		for _, c := range companions(e) {
			note("election "+name+"'s companion", c)
		}
		for _, c := range companions(name) {
			if c != e { // the lock's naming (Standalone and Cluster agree)
				note("lock "+name+"'s companion", c)
			}
		}
	}
	_, err := keyspace.Election("")
	assert.EqualError(t, err, "empty election name")
	_, err = keyspace.Election("redlock:x")
	assert.ErrorIs(t, err, keyspace.ErrReserved)
	assert.ErrorContains(t, err, `election name "redlock:x" begins with "redlock:"`)
}

// TestCompanionsAreDistinct: no two (key, companion) pairs of different keys
// share a name, and every cluster companion is in its key's slot.
func TestCompanionsAreDistinct(t *testing.T) {
	seen := map[string]string{}
	for _, b := range bases {
		for _, n := range []keyspace.Naming{keyspace.Standalone{}, keyspace.Cluster{}} {
			for _, c := range companionsOf(n, b) {
				if other, ok := seen[c]; ok && other != b {
					t.Errorf("%q is a companion of %q and of %q", c, b, other)
				}
				seen[c] = b
			}
		}
		for _, c := range companionsOf(keyspace.Cluster{}, b) {
			assert.Equal(t, keyslot.Slot(b), keyslot.Slot(c), "%q in the slot of %q", c, b)
		}
	}
}

func companionsOf(n keyspace.Naming, key string) []string {
	return append([]string{n.Fence(key), n.Readers(key), n.Held(key), n.Watch(key), n.Holds(key), n.Leader(key)}, n.Queue(key)[1:]...)
}

// FuzzCheck: whatever a caller's key, if Check accepts it, it is no
// companion of any other key of the fuzzer's, in either naming.
func FuzzCheck(f *testing.F) {
	for _, b := range bases {
		f.Add(b, "k")
	}
	f.Fuzz(func(t *testing.T, key, other string) {
		if keyspace.Check(key) != nil || other == "" {
			return
		}
		for _, n := range []keyspace.Naming{keyspace.Standalone{}, keyspace.Cluster{}} {
			for _, c := range companionsOf(n, other) {
				if c == key {
					t.Fatalf("Check accepted %q, a companion of %q", key, other)
				}
			}
		}
	})
}

// Lasting holds exactly the fence counters (an election's term counter
// among them) and the fresh-start declarations: every other name the
// library writes must carry a TTL.
func TestLastingIsFenceCountersAndDeclarations(t *testing.T) {
	t.Parallel()
	for _, b := range bases {
		for _, n := range []keyspace.Naming{keyspace.Standalone{}, keyspace.Cluster{}} {
			assert.True(t, keyspace.Lasting(n.Fence(b)), "fence counter %q", n.Fence(b))
			for _, c := range []string{n.Readers(b), n.Held(b), n.Watch(b), n.Holds(b), n.Leader(b)} {
				assert.False(t, keyspace.Lasting(c), "companion %q", c)
			}
			for _, c := range n.Queue(b) {
				assert.False(t, keyspace.Lasting(c), "queue key %q", c)
			}
		}
	}
	assert.True(t, keyspace.Lasting(keyspace.FreshStart))
	assert.True(t, keyspace.Lasting(keyspace.ShardFreshStart("7")))
	assert.False(t, keyspace.Lasting(keyspace.Ceiling))
	assert.False(t, keyspace.Lasting(keyspace.Reign("7")))
	assert.True(t, keyspace.Lasting(keyspace.MaxTTL))
	assert.False(t, keyspace.Lasting("x:fence"), "a caller's key")
}

// Shape names a key's kind, whatever the caller's part: the companions of
// every base have the shape of the same companion of "K", those of an
// election's key the shape of "ELECTION"'s.
func TestShapeHidesTheCallersPart(t *testing.T) {
	t.Parallel()
	for _, b := range bases {
		assert.Equal(t, "K", keyspace.Shape(b), "key %q", b)
		e, err := keyspace.Election(b)
		require.NoError(t, err)
		n := keyspace.Standalone{}
		for k, want := range map[string]string{b: "K", e: "ELECTION"} {
			assert.Equal(t, "redlock:{"+want+"}:queue:entries", keyspace.Shape(n.Queue(k)[3]), "key %q", k)
			assert.Equal(t, "redlock:{"+want+"}:leader", keyspace.Shape(n.Leader(k)), "key %q", k)
			assert.Equal(t, "redlock:{"+want+"}:queue:watch", keyspace.Shape(n.Watch(k)), "key %q", k)
			assert.Equal(t, "redlock:{"+want+"}:queue:holds", keyspace.Shape(n.Holds(k)), "key %q", k)
			assert.Equal(t, "redlock:{"+want+"}:fence", keyspace.Shape(n.Fence(k)), "key %q", k)
		}
		assert.Equal(t, "redlock:{K}:election", keyspace.Shape(e), "election %q", b)
	}
	assert.Equal(t, "redlock:fresh-start{n}", keyspace.Shape(keyspace.ShardFreshStart("7")))
	assert.Equal(t, "redlock:reign{n}", keyspace.Shape(keyspace.Reign("7")))
	assert.Equal(t, keyspace.Ceiling, keyspace.Shape(keyspace.Ceiling))
	assert.Equal(t, keyspace.MaxTTL, keyspace.Shape(keyspace.MaxTTL))
}
