package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/pool"
)

// Who holds a lock taken by "redlock run".
//
// The lock key's value must stay the bare token: the library compares it on
// every extension and release. So run keeps what status shows about the
// holder (host, pid, since when, which command) in a companion key,
// KEY:holder, on each node. The record names the token it belongs to, and
// lasts exactly as long as the lock does on that node:
//
//   - holder_set.lua writes it only while KEY holds run's token, with KEY's
//     remaining TTL. run writes it once the lock is taken, and again after
//     each extension (the Client's observer sees Extended), so when run dies
//     the record expires with the lock;
//   - holder_del.lua deletes it, if it is still run's, before the release;
//   - status shows a record only on nodes where its token holds KEY.

var (
	//go:embed status.lua
	statusSrc string
	//go:embed holder_set.lua
	holderSetSrc string
	//go:embed holder_del.lua
	holderDelSrc string

	// statusScript reads a lock key, its PTTL and its holder record.
	statusScript = pool.NewScript(statusSrc)
	// holderSet writes a holder record while the lock holds its token.
	holderSet = pool.NewScript(holderSetSrc)
	// holderDel deletes a holder record that is still the caller's.
	holderDel = pool.NewScript(holderDelSrc)
)

// nodeHolderKey names the companion key that holds key's holder record,
// under the library's reserved prefix and in key's hash slot on every kind
// of node (the scripts read both keys). p is unused: the name is the same
// on every node.
func nodeHolderKey(_ pool.Pool, key string) string { return holderKey(key) }

// holderKey is key's holder record's name (keyspace.Holder).
func holderKey(key string) string { return keyspace.Holder(key) }

// holder is the record of who holds a lock.
type holder struct {
	// Token comes first: holder_set.lua recognises a record by the start
	// of its JSON, {"token":".
	Token   string    `json:"token"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
	Command string    `json:"command"`
}

// parseHolder reads a record, reporting false for anything else.
func parseHolder(s string) (holder, bool) {
	var h holder
	if err := json.Unmarshal([]byte(s), &h); err != nil || h.Token == "" {
		return holder{}, false
	}
	return h, true
}

// describe says who the holder is, for status:
// `pid 4242 on web1 since 2025-05-01T10:00:00Z (1m30s ago), running "deploy.sh"`.
func (h holder) describe(now time.Time) string {
	s := fmt.Sprintf("pid %d on %s since %s (%v ago)", h.PID, h.Host,
		h.Since.Format(time.RFC3339), now.Sub(h.Since).Round(time.Second))
	if h.Command != "" {
		s += fmt.Sprintf(", running %q", h.Command)
	}
	return s
}

// holderRecord is one run's record, as written to the nodes.
type holderRecord struct {
	key, token string
	record     string // the JSON of a holder
	pools      []pool.Pool
	timeout    time.Duration // for each node's call
}

// newHolderRecord describes this process, holding key with token since
// now and running argv. Only the command's base name is recorded: its
// arguments may carry secrets.
func newHolderRecord(key, token string, argv []string, pools []pool.Pool, timeout time.Duration) *holderRecord {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown host"
	}
	// Marshal cannot fail on strings, an int and a time of this century.
	b, _ := json.Marshal(holder{
		Token: token, Host: host, PID: os.Getpid(),
		Since: time.Now().UTC().Truncate(time.Second), Command: filepath.Base(argv[0]),
	})
	return &holderRecord{key: key, token: token, record: string(b), pools: pools, timeout: timeout}
}

// write sets the record on every node where the lock holds our token, with
// the lock's remaining TTL there. It returns when every node has answered
// or timed out. Errors are dropped: the record is for people reading
// status, and a node that fails here fails the lock's own calls too, which
// run reports.
func (h *holderRecord) write(ctx context.Context) {
	onEveryNode(ctx, h.pools, h.timeout, func(ctx context.Context, _ int, p pool.Pool) {
		_, _ = p.Eval(ctx, holderSet, []string{h.key, nodeHolderKey(p, h.key)}, h.token, h.record)
	})
}

// remove deletes the record from every node where it is still ours. Errors
// are dropped, as in write: a record left behind expires with the lock.
func (h *holderRecord) remove(ctx context.Context) {
	onEveryNode(ctx, h.pools, h.timeout, func(ctx context.Context, _ int, p pool.Pool) {
		_, _ = p.Eval(ctx, holderDel, []string{nodeHolderKey(p, h.key)}, h.record)
	})
}

// keep rewrites the record after each extension, announced on extended,
// so that it keeps expiring with the lock. It runs in a goroutine that the
// returned stop function ends and waits for.
func (h *holderRecord) keep(ctx context.Context, extended <-chan struct{}) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-extended:
				h.write(ctx)
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// onEveryNode calls f for each node in parallel, each call bounded by
// timeout, and returns when all have returned.
func onEveryNode(ctx context.Context, pools []pool.Pool, timeout time.Duration, f func(ctx context.Context, i int, p pool.Pool)) {
	var wg sync.WaitGroup
	for i, p := range pools {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			f(ctx, i, p)
		})
	}
	wg.Wait()
}

// recordFor returns the holder record of token among states, if a node
// holding token has one.
func recordFor(states []nodeState, token string) (holder, bool) {
	for _, s := range states {
		if s.Err != nil || !s.Held || s.Token != token || s.Record == "" {
			continue
		}
		if h, ok := parseHolder(s.Record); ok && h.Token == token {
			return h, true
		}
	}
	return holder{}, false
}
