package lease

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/internal/wait"
)

// One reader per reply shape: each shape's replies, the malformed ones
// included, read as the kinds rely on.

func TestReadTake(t *testing.T) {
	for _, tc := range []struct {
		name      string
		reply     any
		withPlace bool
		ok        bool
		place     string
		counter   uint64
		err       error
	}{
		{"taken", []any{int64(1), "7"}, false, true, "", 7, nil},
		{"taken at a place", []any{int64(1), "3", "12"}, true, true, "3", 12, nil},
		{"held", []any{int64(0)}, false, false, "", 0, nil},
		{"another kind", []any{int64(scripts.OtherKind), "permits"}, false, false, "", 0, ErrWrongKind},
		{"lock-delay", []any{int64(scripts.TakeDelayed), int64(40)}, false, false, "", 0, ErrLockDelay},
		{"no counter", []any{int64(1)}, false, false, "", 0, ErrMalformed},
		{"no place", []any{int64(1), "7"}, true, false, "", 0, ErrMalformed},
		{"empty", []any{}, false, false, "", 0, ErrMalformed},
		{"not an array", "OK", false, false, "", 0, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tk Take
			ok, err := readTake(tc.reply, tc.withPlace, &tk)
			assert.Equal(t, tc.ok, ok)
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.place, tk.Place)
			assert.Equal(t, tc.counter, tk.Counter)
		})
	}
	var tk Take
	_, err := readTake([]any{int64(1), "x"}, false, &tk)
	assert.ErrorContains(t, err, "fence counter is not a number")
}

func TestReadSet(t *testing.T) {
	ok, rest, err := readSet([]any{int64(scripts.AcquireSet), "5"})
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, []any{"5"}, rest)
	ok, _, err = readSet([]any{int64(scripts.AcquireHeld)})
	assert.False(t, ok)
	assert.NoError(t, err)
	_, _, err = readSet([]any{int64(scripts.AcquireDelayed), int64(1500)})
	assert.ErrorIs(t, err, ErrLockDelay)
	assert.ErrorContains(t, err, "1.5s left")
	_, _, err = readSet([]any{int64(9)})
	assert.ErrorIs(t, err, ErrMalformed)
}

// grants records the hand-offs a release's reply delivers.
type grants struct{ got []string }

func (g *grants) Channel() string { return "ch" }
func (g *grants) Deliver(token string, i, seq int) {
	g.got = append(g.got, token)
	_ = i + seq
}

func TestReadRelease(t *testing.T) {
	g := &grants{}
	e := &Env{Grants: g}
	code, err := e.readRelease(0, []any{int64(1), "A", int64(3)}, nil)
	require.NoError(t, err)
	assert.Equal(t, int64(1), code)
	code, err = e.readRelease(0, []any{int64(2), "B", int64(1), "C", int64(2)}, nil) // release_all: a pair per key
	require.NoError(t, err)
	assert.Equal(t, int64(2), code)
	assert.Equal(t, []string{"A", "B", "C"}, g.got)
	_, err = e.readRelease(0, nil, errors.New("down"))
	assert.EqualError(t, err, "down")
	_, err = e.readRelease(0, []any{}, nil)
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestReadEnqueue(t *testing.T) {
	var r wait.Reply
	require.NoError(t, readEnqueue([]any{int64(scripts.EnqueueQueued), "T", int64(900), int64(1)}, &r))
	assert.Equal(t, "T", r.Holder)
	assert.Equal(t, 900*time.Millisecond, r.HolderTTL)
	assert.True(t, r.Delayed)
	r = wait.Reply{}
	require.NoError(t, readEnqueue([]any{int64(scripts.EnqueueGranted), int64(4)}, &r))
	assert.Equal(t, 4, r.GrantSeq)
	assert.ErrorIs(t, readEnqueue([]any{int64(scripts.EnqueueLeft)}, &r), ErrLeft)
	assert.ErrorIs(t, readEnqueue([]any{int64(scripts.OtherKind), "hash"}, &r), ErrWrongKind)
	assert.ErrorIs(t, readEnqueue([]any{int64(scripts.EnqueueGranted)}, &r), ErrMalformed)
	assert.ErrorIs(t, readEnqueue([]any{int64(42)}, &r), ErrMalformed)
}

func TestReadOwnedTake(t *testing.T) {
	var tk Take
	ok, err := readOwnedTake([]any{int64(scripts.OwnedTaken), OwnedFresh, "4", ""}, &tk)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, Take{Place: OwnedFresh, Counter: 4}, tk)
	// A re-entry of a fenced owner reads the owner's fence less one.
	tk = Take{}
	ok, err = readOwnedTake([]any{int64(scripts.OwnedTaken), OwnedAgain, "9", "6"}, &tk)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, uint64(5), tk.Counter)
	_, err = readOwnedTake([]any{int64(scripts.OwnedTaken), OwnedAgain, "9", "0"}, &tk)
	assert.ErrorContains(t, err, "owner's fence is not a number")
	ok, err = readOwnedTake([]any{int64(scripts.OwnedRefused)}, &tk)
	assert.False(t, ok)
	assert.NoError(t, err)
	_, err = readOwnedTake([]any{int64(scripts.OwnedTaken), OwnedFresh}, &tk)
	assert.ErrorIs(t, err, ErrMalformed)
}

func TestMultiReadTake(t *testing.T) {
	m := NewMulti([]string{"a", "b"}, false)
	var tk Take
	ok, err := m.readTake(nil, 0, []any{int64(scripts.AcquireAllSet)}, false, &tk)
	require.NoError(t, err)
	assert.True(t, ok)
	ok, err = m.readTake(nil, 0, []any{int64(0), int64(2)}, false, &tk)
	assert.False(t, ok)
	assert.NoError(t, err)
	assert.Equal(t, "b", tk.Held)
	_, err = m.readTake(nil, 0, []any{int64(scripts.OtherKind), "permits", int64(1)}, false, &tk)
	assert.ErrorIs(t, err, ErrWrongKind)
	assert.ErrorContains(t, err, `key "a" holds permits`)
	_, err = m.readTake(nil, 0, []any{int64(scripts.OtherKind), "permits", int64(3)}, false, &tk)
	assert.ErrorIs(t, err, ErrMalformed)
	tk = Take{}
	_, err = m.readTake(nil, 0, []any{int64(scripts.TakeDelayed), int64(20), int64(1)}, false, &tk)
	assert.ErrorIs(t, err, ErrLockDelay)
	assert.Equal(t, "a", tk.Held)
}

func TestTokens(t *testing.T) {
	m := NewMulti([]string{"a"}, false)
	assert.True(t, IsMultiToken(m.Token()))
	x := NewExclusive("k", false, false)
	assert.False(t, IsMultiToken(x.Token()))
	assert.False(t, IsOwnerValue(x.Token()))
	assert.True(t, IsOwnerValue(NewOwned("k", "job", false).value))
	assert.NotEqual(t, x.Token(), x.Token())
}
