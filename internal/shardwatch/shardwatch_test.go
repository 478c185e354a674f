package shardwatch_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/shardwatch"
	"github.com/redlockgo/redlock/pool"
)

func TestReignAge(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    shardwatch.Reign
		want time.Duration
	}{
		{"a run never promoted: its uptime less the second INFO may add",
			shardwatch.Reign{Uptime: 10 * time.Second}, 9 * time.Second},
		{"a run just started: never below zero",
			shardwatch.Reign{Uptime: 0}, 0},
		{"a run of one second: zero, since INFO may round up a second",
			shardwatch.Reign{Uptime: time.Second}, 0},
		{"a run never promoted whose marker saw it longer than its uptime says",
			shardwatch.Reign{Uptime: 5 * time.Second, Seen: 7 * time.Second}, 7 * time.Second},
		{"a promoted master: the first sight, whatever its uptime",
			shardwatch.Reign{Promoted: true, Uptime: time.Hour, Seen: 3 * time.Second}, 3 * time.Second},
		{"a promoted master at its first sight",
			shardwatch.Reign{Promoted: true, Uptime: time.Hour}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.r.Age())
		})
	}
}

func TestReignLeft(t *testing.T) {
	const q = 10 * time.Second
	for _, tc := range []struct {
		name     string
		r        shardwatch.Reign
		q        time.Duration
		persists bool
		want     time.Duration
	}{
		{"a young run stays out for the rest of the quarantine",
			shardwatch.Reign{Uptime: 5 * time.Second}, q, false, 6 * time.Second},
		{"a run older than the quarantine counts",
			shardwatch.Reign{Uptime: 11 * time.Second}, q, false, 0},
		{"a run exactly the quarantine old counts",
			shardwatch.Reign{Uptime: q + time.Second}, q, false, 0},
		{"a fresh run never promoted counts at once",
			shardwatch.Reign{Uptime: time.Second, Fresh: true}, q, false, 0},
		{"a fresh run that took over is out: its declaration does not cover the keys it never received",
			shardwatch.Reign{Promoted: true, Uptime: time.Hour, Seen: 4 * time.Second, Fresh: true}, q, false, 6 * time.Second},
		{"a promoted master at its first sight is out for the whole quarantine",
			shardwatch.Reign{Promoted: true, Uptime: time.Hour}, q, false, q},
		{"a promoted master seen for the quarantine counts",
			shardwatch.Reign{Promoted: true, Seen: q}, q, false, 0},
		{"no quarantine: everything counts",
			shardwatch.Reign{Promoted: true}, 0, false, 0},
		{"a young run that persists every write counts at once",
			shardwatch.Reign{Uptime: time.Second}, q, true, 0},
		{"a promoted master that persists every write is out: its disk never had the keys",
			shardwatch.Reign{Promoted: true, Uptime: time.Hour, Seen: 4 * time.Second}, q, true, 6 * time.Second},
		{"a run that took over before its restart and persists is out from that takeover's first sight",
			shardwatch.Reign{Uptime: time.Second, TookOver: true, Taken: 3 * time.Second}, q, true, 7 * time.Second},
		{"a run that took over before its restart counts once the takeover is the quarantine old",
			shardwatch.Reign{Uptime: time.Second, TookOver: true, Taken: q}, q, true, 0},
		{"a fresh declaration spares the restart, not a takeover before it",
			shardwatch.Reign{Uptime: time.Second, Fresh: true, TookOver: true, Taken: 2 * time.Second}, q, false, 8 * time.Second},
		{"without persistence the later of the two ends: the restart",
			shardwatch.Reign{Uptime: 2 * time.Second, TookOver: true, Taken: 8 * time.Second}, q, false, 9 * time.Second},
		{"without persistence the later of the two ends: the takeover",
			shardwatch.Reign{Uptime: 9 * time.Second, TookOver: true, Taken: 1 * time.Second}, q, false, 9 * time.Second},
		{"a promoted run whose marker knew of an older takeover: the newer sight counts",
			shardwatch.Reign{Promoted: true, Seen: 5 * time.Second, TookOver: true, Taken: 2 * time.Second}, q, true, 8 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.r.Left(tc.q, tc.persists))
		})
	}
}

// TestTag checks that a shard's tag is the first n whose slot the shard
// serves: the one reign.lua finds on the master.
func TestTag(t *testing.T) {
	for _, masters := range []int{1, 2, 3, 5} {
		for i := range masters {
			lo, hi := i*keyslot.Slots/masters, (i+1)*keyslot.Slots/masters-1
			tag := shardwatch.Tag(lo, hi)
			n, err := strconv.Atoi(tag)
			require.NoError(t, err)
			slot := keyslot.Slot(tag)
			assert.True(t, slot >= lo && slot <= hi, "tag %s in slot %d, outside %d..%d", tag, slot, lo, hi)
			for m := range n {
				s := keyslot.Slot(strconv.Itoa(m))
				assert.False(t, s >= lo && s <= hi, "%d in slot %d comes before tag %s", m, s, tag)
			}
			assert.Equal(t, "redlock:fresh-start{"+tag+"}", shardwatch.FreshKey(tag))
		}
	}
}

func TestRead(t *testing.T) {
	const key = "orders"
	reply := func(role, replid string, second any, runid string, uptime, seen, fresh any) []any {
		return []any{role, replid, second, runid, uptime, seen, fresh, int64(0), int64(-1), "n1"}
	}
	taken := func(r []any, ms any) []any { r[8] = ms; return r }
	for _, tc := range []struct {
		name    string
		reply   any
		err     error
		want    shardwatch.Reign
		wantErr string
	}{
		{name: "a master that never took over",
			reply: reply("master", "ab12", int64(-1), "cd34", int64(42), int64(1500), int64(0)),
			want: shardwatch.Reign{RunID: "cd34", ReplID: "ab12", NodeID: "n1", Uptime: 42 * time.Second,
				Seen: 1500 * time.Millisecond, Tag: "0"}},
		{name: "a master whose marker knows of a takeover before its run",
			reply: taken(reply("master", "ab12", int64(-1), "cd34", int64(42), int64(1500), int64(0)), int64(2500)),
			want: shardwatch.Reign{RunID: "cd34", ReplID: "ab12", NodeID: "n1", Uptime: 42 * time.Second,
				Seen: 1500 * time.Millisecond, TookOver: true, Taken: 2500 * time.Millisecond, Tag: "0"}},
		{name: "a takeover seen just now",
			reply: taken(reply("master", "ab12", int64(-1), "cd34", int64(42), int64(0), int64(0)), "0"),
			want: shardwatch.Reign{RunID: "cd34", ReplID: "ab12", NodeID: "n1", Uptime: 42 * time.Second,
				TookOver: true, Tag: "0"}},
		{name: "a promoted master, fresh, numbers as strings",
			reply: reply("master", "ab12", "7", "cd34", "3", "0", "1"),
			want: shardwatch.Reign{RunID: "cd34", ReplID: "ab12", NodeID: "n1", Promoted: true,
				Uptime: 3 * time.Second, Fresh: true, Tag: "0"}},
		{name: "a replica answered",
			reply:   reply("slave", "ab12", int64(-1), "cd34", int64(42), int64(0), int64(0)),
			wantErr: "is a slave"},
		{name: "INFO hides the ids",
			reply:   reply("master", "", int64(-1), "", int64(42), int64(0), int64(0)),
			wantErr: "hides run_id"},
		{name: "a short reply", reply: []any{"master", "ab12"}, wantErr: "malformed"},
		{name: "an earlier version's reply", reply: []any{"master", "ab12", int64(-1), "cd34", int64(42), int64(0), int64(0), int64(0)},
			wantErr: "malformed"},
		{name: "no array", reply: int64(1), wantErr: "malformed"},
		{name: "the node's error", err: errors.New("MOVED 123 10.0.0.1:7000"), wantErr: "MOVED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &fakePool{reply: tc.reply, err: tc.err}
			r, err := shardwatch.Read(context.Background(), p, key, 48*time.Hour)
			require.Equal(t, []string{key}, p.keys, "the script routes by the lock key")
			require.Equal(t, []any{(48 * time.Hour).Milliseconds()}, p.args, "the marker's keep")
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, r)
		})
	}
	t.Run("the marker is kept at least a second", func(t *testing.T) {
		p := &fakePool{reply: reply("master", "ab12", int64(-1), "cd34", int64(1), int64(0), int64(0))}
		_, err := shardwatch.Read(context.Background(), p, key, time.Millisecond)
		require.NoError(t, err)
		assert.Equal(t, []any{int64(1000)}, p.args)
	})
}

// fakePool answers Eval with a canned reply and records its keys and args.
type fakePool struct {
	reply any
	err   error
	keys  []string
	args  []any
}

func (f *fakePool) Addr() string { return "fake:7000" }
func (f *fakePool) SetNX(context.Context, string, string, time.Duration) (bool, error) {
	return false, errors.New("fakePool: no SetNX")
}
func (f *fakePool) Eval(_ context.Context, s *pool.Script, keys []string, args ...any) (any, error) {
	if s != shardwatch.Script {
		return nil, errors.New("fakePool: not the reign script")
	}
	f.keys, f.args = keys, args
	return f.reply, f.err
}
func (f *fakePool) Close() error { return nil }
