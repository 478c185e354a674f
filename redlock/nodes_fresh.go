package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/pool"
)

// ErrNotFresh is wrapped by DeclareFresh's error for a node that holds keys
// of this library: its deployment is not new.
var ErrNotFresh = errors.New("redlock: node holds the library's keys")

// Declaration is the fresh-start declaration DeclareFresh set on one node:
// SET pool.FreshStartKey RunID.
type Declaration struct {
	Node  int
	Addr  string
	RunID string
}

// DeclareFresh declares every node of a new deployment fresh: on each, it
// sets pool.FreshStartKey to the server's current run_id, so that the
// restart quarantine counts the node at once though it does not persist
// every write. Call it once, when the nodes have started for the first
// time, before any client takes a lock; a Pool that connected before
// learns of the declaration at its next connection.
//
// It refuses, and declares no node, when any node holds a key of this
// library: a lock, readers, permits, a companion or marker, or an earlier
// run's declaration. Locks on any node mean the deployment is not new,
// and a node of it that came back empty is a restart, which the quarantine
// must judge. It scans each node's keys (SCAN) and looks for names that
// keyspace rules reserve (companions such as K:fence and fence{K},
// "redlock:" markers, "election:" keys) and for values a lock writes under
// the caller's key (a token string, a permit hash). The error joins one
// *NodeError per node that holds such keys, wrapping ErrNotFresh and
// naming up to three, or per node that could not be read or written. A
// node that is a Redis Cluster, or whose Pool is not a pool.Commander, is
// refused too: declare a cluster's shards on their masters
// (redlock:fresh-start{n}, see WithQuarantine).
//
// Each command is bounded by MaxNodeTimeout; the scan by ctx. A node that
// restarts between the scan and the SET gets a declaration of its earlier
// run, which does not apply.
func DeclareFresh(ctx context.Context, pools []pool.Pool) ([]Declaration, error) {
	if ctx == nil {
		return nil, errors.New("redlock: nil context")
	}
	if len(pools) == 0 {
		return nil, errors.New("redlock: no pools")
	}
	out := make([]Declaration, len(pools))
	errs := make([]error, len(pools))
	eachPool(pools, func(i int, p pool.Pool) {
		out[i] = Declaration{Node: i, Addr: p.Addr()}
		out[i].RunID, errs[i] = freshRun(ctx, p)
	})
	var refused []error
	for i, err := range errs {
		if err != nil {
			refused = append(refused, &NodeError{Node: i, Addr: out[i].Addr, Err: err})
		}
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("redlock: no node declared fresh: %w", errors.Join(refused...))
	}
	eachPool(pools, func(i int, p pool.Pool) {
		cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
		defer cancel()
		_, errs[i] = p.(pool.Commander).Do(cctx, "SET", pool.FreshStartKey, out[i].RunID)
	})
	for i, err := range errs {
		if err != nil {
			refused = append(refused, &NodeError{Node: i, Addr: out[i].Addr, Err: err})
		}
	}
	if len(refused) > 0 {
		return out, fmt.Errorf("redlock: declaring the nodes fresh: %w", errors.Join(refused...))
	}
	return out, nil
}

// freshRun returns the run_id of p's server when it holds no key of this
// library but a declaration of that same run, or why not.
func freshRun(ctx context.Context, p pool.Pool) (string, error) {
	cmd, ok := p.(pool.Commander)
	if cp, cl := p.(pool.Cluster); cl && cp.IsCluster() {
		return "", errors.New("a Redis Cluster: declare each shard on its master (redlock:fresh-start{n})")
	}
	if !ok {
		return "", errors.New("its Pool cannot run INFO or SCAN (not a pool.Commander)")
	}
	do := func(args ...string) (any, error) {
		cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
		defer cancel()
		return cmd.Do(cctx, args...)
	}
	info, err := do("INFO", "server")
	if err != nil {
		return "", err
	}
	s, _ := info.(string)
	runID := infoField(s, "run_id")
	if runID == "" {
		return "", errors.New("INFO server has no run_id")
	}
	found, total, err := libraryKeys(ctx, p, cmd, runID)
	if err != nil {
		return "", err
	}
	if total > 0 {
		return "", fmt.Errorf("%w: %d, such as %s: a restart, not a new node", ErrNotFresh, total, strings.Join(found, ", "))
	}
	return runID, nil
}

// libraryKeys scans the node's keys and returns up to three of those of
// this library (quoted), and how many there are: names keyspace.Check
// refuses, but the declaration of run runID, and keys whose value is a
// lock's (scripts.LooksLike).
func libraryKeys(ctx context.Context, p pool.Pool, cmd pool.Commander, runID string) ([]string, int, error) {
	var found []string
	total := 0
	note := func(k string) {
		if total++; len(found) < 3 {
			found = append(found, strconv.Quote(k))
		}
	}
	cursor := "0"
	for {
		cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
		reply, err := cmd.Do(cctx, "SCAN", cursor, "COUNT", "1000")
		cancel()
		if err != nil {
			return nil, 0, err
		}
		var keys []string
		if cursor, keys, err = parseScan(reply); err != nil {
			return nil, 0, err
		}
		var plain []string
		for _, k := range keys {
			switch {
			case k == pool.FreshStartKey:
				cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
				v, err := cmd.Do(cctx, "GET", k)
				cancel()
				if err != nil || v != runID {
					note(k) // an earlier run's: this server restarted with its data
				}
			case keyspace.Check(k) != nil:
				note(k)
			default:
				plain = append(plain, k)
			}
		}
		if len(plain) > 0 {
			cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
			reply, err := p.Eval(cctx, scripts.LooksLike, plain)
			cancel()
			if err != nil {
				return nil, 0, err
			}
			a, _ := reply.([]any)
			for _, k := range a {
				note(fmt.Sprint(k))
			}
		}
		if cursor == "0" {
			return found, total, nil
		}
	}
}
