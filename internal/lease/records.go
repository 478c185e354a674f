package lease

import (
	"context"

	"github.com/redlockgo/redlock/internal/scripts"
)

// The calls beside the kinds: an election's leader record, written and
// removed only while the election's lock key holds the leader's token, and
// the reads that report what a key holds. Each runs on one node.

// RecordLeader writes the leader record {token, value, term, rev} of the
// election whose lock key is key on node i, while key holds token there.
func (e *Env) RecordLeader(ctx context.Context, i int, key, token, value, term, rev string) (bool, error) {
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.LeaderSet, []string{key, e.Nodes.Names(i).Leader(key)}, token, value, term, rev)
	return Int(v) == 1, err
}

// DropLeader removes the leader record of the election key key on node i
// while it names token.
func (e *Env) DropLeader(ctx context.Context, i int, key, token string) (bool, error) {
	v, err := e.Nodes.Pool(i).Eval(ctx, scripts.LeaderDel, []string{e.Nodes.Names(i).Leader(key)}, token)
	return Int(v) == 1, err
}

// ReadLeader reads the election key key and its leader record on node i
// in one step (LeaderGet's reply).
func (e *Env) ReadLeader(ctx context.Context, i int, key string) (any, error) {
	return e.Nodes.Pool(i).Eval(ctx, scripts.LeaderGet, []string{key, e.Nodes.Names(i).Leader(key)})
}

// ReadStatus reads key on node i (Status's reply: value, PTTL, kind,
// leases); with readers, the latest lease of its readers too.
func (e *Env) ReadStatus(ctx context.Context, i int, key string, readers bool) (any, error) {
	keys := []string{key}
	if readers {
		keys = append(keys, e.Nodes.Names(i).Readers(key))
	}
	return e.Nodes.Pool(i).Eval(ctx, scripts.Status, keys)
}

// KindOf returns what key holds on node i, by Status's names ("lock",
// "readers", "permits", a Redis type's name; "" for an absent key). A key
// reserved for a waiting multi-lock is "lock": to any other caller it is
// an exclusive lock's key, taken.
func (e *Env) KindOf(ctx context.Context, i int, key string) (string, error) {
	v, err := e.ReadStatus(ctx, i, key, false)
	if err != nil {
		return "", err
	}
	arr, _ := v.([]any)
	if len(arr) != 4 {
		return "", ErrMalformed
	}
	kind, _ := arr[2].(string)
	if kind == "reserved" {
		kind = "lock"
	}
	return kind, nil
}
