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
	"election:x", "election:{t}x", "election:a}b",
}

// companions returns every name the library writes beside key, in both
// namings.
func companions(key string) []string {
	var out []string
	for _, n := range []keyspace.Naming{keyspace.Standalone{}, keyspace.Cluster{}} {
		out = append(out, n.Fence(key), n.Readers(key), n.Held(key), n.Watch(key), n.Holds(key), n.Leader(key))
		out = append(out, n.Queue(key)[1:]...)
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
	out = append(out, keyspace.FreshStart)
	for _, tag := range []string{"0", "1", "abc"} {
		out = append(out, keyspace.ShardFreshStart(tag), keyspace.Reign(tag))
	}
	return out
}

// TestNoKeyReachesACompanion: Check refuses every name of the library's own,
// so no caller's key can be one; and companions of distinct keys differ.
func TestNoKeyReachesACompanion(t *testing.T) {
	for _, name := range internalNames() {
		err := keyspace.Check(name)
		require.Error(t, err, "Check(%q) must refuse a name of the library's", name)
		assert.ErrorIs(t, err, keyspace.ErrReserved, name)
	}
	for _, b := range bases {
		if strings.HasPrefix(b, keyspace.ElectionPrefix) {
			continue
		}
		assert.NoError(t, keyspace.Check(b), "a caller's ordinary key %q", b)
	}
}

// TestElectionNamesCannotReachInternalKeys: an election's key passes the
// same forms, so "x:leader" (the record of election "x") is no election.
func TestElectionNamesCannotReachInternalKeys(t *testing.T) {
	for _, name := range []string{"x:leader", "y:fence", "q:queue", "q:queue:leases", "z:readers", "w:held"} {
		_, err := keyspace.Election(name)
		assert.ErrorIs(t, err, keyspace.ErrReserved, name)
	}
	_, err := keyspace.Election("")
	assert.Error(t, err)
	for _, name := range []string{"x", "scheduler", "{orders}", "a:b"} {
		k, err := keyspace.Election(name)
		require.NoError(t, err, name)
		assert.Equal(t, "election:"+name, k)
	}
	// An election key is not a caller's lock key.
	assert.ErrorIs(t, keyspace.Check("election:x"), keyspace.ErrReserved)
}

// TestSuffixesEndNoOtherSuffix: the argument of the package doc, checked.
func TestSuffixesEndNoOtherSuffix(t *testing.T) {
	for _, a := range keyspace.Suffixes {
		for _, b := range keyspace.Suffixes {
			if a != b {
				assert.False(t, strings.HasSuffix(a, b), "%q ends with %q", a, b)
			}
		}
	}
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
}

// Shape names a key's kind, whatever the caller's part: the companions of
// every base have the shape of the same companion of "K" (of
// "election:NAME" for an election's key).
func TestShapeHidesTheCallersPart(t *testing.T) {
	t.Parallel()
	for _, b := range bases {
		want := "K"
		if strings.HasPrefix(b, keyspace.ElectionPrefix) {
			want = "election:NAME"
		}
		if strings.Contains(b, "}") && !strings.HasPrefix(b, "{") && !strings.HasPrefix(b, keyspace.ElectionPrefix+"{") {
			continue // a cluster companion of a key without a tag but with '}' carries a slot tag
		}
		assert.Equal(t, want, keyspace.Shape(b), "key %q", b)
		s, c := keyspace.Standalone{}, keyspace.Cluster{}
		assert.Equal(t, want+":queue:entries", keyspace.Shape(s.Queue(b)[3]), "key %q", b)
		assert.Equal(t, want+":leader", keyspace.Shape(s.Leader(b)), "key %q", b)
		assert.Equal(t, want+":queue:watch", keyspace.Shape(s.Watch(b)), "key %q", b)
		if _, tagged := keyslot.Tag(b); !tagged {
			assert.Equal(t, "fence{"+want+"}", keyspace.Shape(c.Fence(b)), "key %q", b)
			assert.Equal(t, "queue{"+want+"}:holds", keyspace.Shape(c.Holds(b)), "key %q", b)
		}
	}
	assert.Equal(t, "redlock:fresh-start{n}", keyspace.Shape(keyspace.ShardFreshStart("7")))
	assert.Equal(t, "redlock:reign{n}", keyspace.Shape(keyspace.Reign("7")))
	assert.Equal(t, keyspace.Ceiling, keyspace.Shape(keyspace.Ceiling))
}
