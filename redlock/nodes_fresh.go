package redlock

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/internal/shardwatch"
	"github.com/redlockgo/redlock/pool"
)

// ErrNotFresh is wrapped by DeclareFresh's error for a node that holds keys
// of this library: its deployment is not new.
var ErrNotFresh = errors.New("redlock: node holds the library's keys")

// Declaration is one fresh-start declaration DeclareFresh set: SET Key
// RunID on the server at Addr, a standalone node or a shard master of
// cluster node Node.
type Declaration struct {
	Node  int
	Addr  string
	RunID string
	// Key is pool.FreshStartKey on a standalone node, the shard's
	// redlock:fresh-start{n} on a cluster's master.
	Key string
}

// DeclareFresh declares every node of a new deployment fresh, so that the
// restart quarantine counts it at once though it does not persist every
// write: it sets pool.FreshStartKey to each server's run_id (on a Redis
// Cluster, a marker per shard master) and returns the declarations. Call it
// once, before any client takes a lock. It declares nothing while any node
// may hold a valid lease or a key of this library: the error then joins
// one *NodeError per such node, wrapping ErrNotFresh and saying when to
// retry, and one per node that could not be read or written. Each command
// is bounded by MaxNodeTimeout, the scan by ctx. See docs/cli.md, "redlock
// nodes".
func DeclareFresh(ctx context.Context, pools []pool.Pool) ([]Declaration, error) {
	if ctx == nil {
		return nil, errors.New("redlock: nil context")
	}
	if len(pools) == 0 {
		return nil, errors.New("redlock: no pools")
	}
	plans := make([][]Declaration, len(pools))
	errs := make([]error, len(pools))
	eachPool(pools, func(i int, p pool.Pool) { plans[i], errs[i] = planFresh(ctx, i, p) })
	if err := nodeErrors(pools, errs); err != nil {
		return nil, fmt.Errorf("redlock: no node declared fresh: %w", err)
	}
	eachPool(pools, func(i int, p pool.Pool) { errs[i] = declare(ctx, p, plans[i]) })
	var out []Declaration
	for _, ds := range plans {
		out = append(out, ds...)
	}
	if err := nodeErrors(pools, errs); err != nil {
		return out, fmt.Errorf("redlock: declaring the nodes fresh: %w", err)
	}
	return out, nil
}

// nodeErrors joins one *NodeError for each non-nil errs[i].
func nodeErrors(pools []pool.Pool, errs []error) error {
	var out []error
	for i, err := range errs {
		if err != nil {
			addr := "<nil pool>"
			if pools[i] != nil {
				addr = pools[i].Addr()
			}
			out = append(out, &NodeError{Node: i, Addr: addr, Err: err})
		}
	}
	return errors.Join(out...)
}

// planFresh checks node i (p) and returns the declarations it needs: one,
// or one per shard master of a cluster node.
func planFresh(ctx context.Context, i int, p pool.Pool) ([]Declaration, error) {
	if p == nil {
		return nil, errors.New("nil pool")
	}
	if cp, ok := p.(pool.Cluster); !ok || !cp.IsCluster() {
		runID, err := freshRun(ctx, p, "", "")
		return []Declaration{{Node: i, Addr: p.Addr(), RunID: runID, Key: pool.FreshStartKey}}, err
	}
	ms, ok := p.(pool.Masters)
	if !ok {
		return nil, errors.New("a Redis Cluster whose Pool does not list its masters (not a pool.Masters): declare each shard on its master (redlock:fresh-start{n})")
	}
	var mu sync.Mutex
	var out []Declaration
	err := ms.EachMaster(ctx, func(ctx context.Context, m pool.Pool) error {
		d, err := planMaster(ctx, i, m)
		if err != nil {
			return fmt.Errorf("master %s: %w", m.Addr(), err)
		}
		mu.Lock()
		defer mu.Unlock()
		out = append(out, d)
		return nil
	})
	slices.SortFunc(out, func(a, b Declaration) int { return strings.Compare(a.Addr, b.Addr) })
	if err == nil && len(out) == 0 {
		err = errors.New("a Redis Cluster with no master listed")
	}
	return out, err
}

// planMaster checks one shard master m of cluster node i.
func planMaster(ctx context.Context, i int, m pool.Pool) (Declaration, error) {
	cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
	r, err := shardwatch.Look(cctx, m)
	cancel()
	if err != nil {
		return Declaration{}, err
	}
	if r.Promoted || r.TookOver {
		return Declaration{}, fmt.Errorf("%w: the master took over from another (a failover), and lacks what its shard granted: no declaration spares it", ErrNotFresh)
	}
	runID, err := freshRun(ctx, m, r.Tag, r.ReplID)
	if err == nil && runID != r.RunID {
		err = errors.New("the master restarted while it was read")
	}
	return Declaration{Node: i, Addr: m.Addr(), RunID: runID, Key: shardwatch.FreshKey(r.Tag)}, err
}

// declare sets the declarations planned for node p (planFresh).
func declare(ctx context.Context, p pool.Pool, plan []Declaration) error {
	set := func(ctx context.Context, cmd pool.Commander, d Declaration) error {
		cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
		defer cancel()
		_, err := cmd.Do(cctx, "SET", d.Key, d.RunID)
		return err
	}
	ms, ok := p.(pool.Masters)
	if cp, cl := p.(pool.Cluster); !ok || !cl || !cp.IsCluster() {
		return set(ctx, p.(pool.Commander), plan[0]) // freshRun checked that it is one
	}
	return ms.EachMaster(ctx, func(ctx context.Context, m pool.Pool) error {
		i := slices.IndexFunc(plan, func(d Declaration) bool { return d.Addr == m.Addr() })
		if i < 0 {
			return fmt.Errorf("master %s: not a master when the nodes were checked: not declared", m.Addr())
		}
		cmd, _ := m.(pool.Commander)
		if cmd == nil {
			return fmt.Errorf("master %s: not a pool.Commander", m.Addr())
		}
		cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
		info, err := cmd.Do(cctx, "INFO", "server")
		cancel()
		if err != nil {
			return fmt.Errorf("master %s: %w", m.Addr(), err)
		}
		s, _ := info.(string)
		if infoField(s, "run_id") != plan[i].RunID {
			return fmt.Errorf("master %s: restarted since it was checked: not declared", m.Addr())
		}
		if err := set(ctx, cmd, plan[i]); err != nil {
			return fmt.Errorf("master %s: %w", m.Addr(), err)
		}
		return nil
	})
}

// freshRun returns the run_id of p's server when it carries no live lease
// ceiling and holds no key of this library but a declaration of that same
// run, or why not (both, when both refuse it). On a cluster's
// shard master, tag is the shard's tag and replid its reign's replication
// id: its declaration and a marker of this reign are no obstacle.
func freshRun(ctx context.Context, p pool.Pool, tag, replid string) (string, error) {
	cmd, ok := p.(pool.Commander)
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
	var lease error
	if tag == "" {
		// A cluster's shard master keeps no ceiling: its keys tell.
		lease = liveCeiling(do)
	}
	found, total, err := libraryKeys(ctx, p, cmd, runID, tag, replid)
	if err != nil {
		return "", errors.Join(lease, err)
	}
	if total > 0 {
		err = fmt.Errorf("%w: %d of the library's keys, such as %s: a restart, not a new node", ErrNotFresh, total, strings.Join(found, ", "))
	}
	if err := errors.Join(lease, err); err != nil {
		return "", err
	}
	return runID, nil
}

// libraryKeys scans the node's keys and returns up to three of those of
// this library (quoted), and how many there are: names keyspace.Check
// refuses, but the declaration of run runID, and keys whose value is a
// lock's (scripts.LooksLike).
func libraryKeys(ctx context.Context, p pool.Pool, cmd pool.Commander, runID, tag, replid string) ([]string, int, error) {
	declaration := pool.FreshStartKey
	if tag != "" {
		declaration = shardwatch.FreshKey(tag)
	}
	get := func(k string) (any, error) {
		cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
		defer cancel()
		return cmd.Do(cctx, "GET", k)
	}
	var found []string
	total := 0
	note := func(k string) {
		if total++; len(found) < 3 {
			found = append(found, strconv.Quote(k)+keyExpiry(ctx, cmd, k))
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
			case k == declaration:
				if v, err := get(k); err != nil || v != runID {
					note(k) // an earlier run's: this server restarted with its data
				}
			case tag != "" && k == keyspace.Reign(tag):
				if v, err := get(k); err != nil || !strings.HasPrefix(fmt.Sprint(v), replid+" ") {
					note(k) // an earlier reign's: the shard was used before this run
				}
			case k == keyspace.Ceiling:
				// Read on its own (liveCeiling): evidence of a lease while
				// it lives, whatever the node's other keys.
			case k == keyspace.MaxTTL:
				// The recorded max TTL tells nothing of an earlier run: a
				// lease of one would be a key of its own, found here.
			case keyspace.Check(k) != nil:
				note(k)
			default:
				plain = append(plain, k)
			}
		}
		for _, group := range bySlot(plain, tag != "") {
			cctx, cancel := context.WithTimeout(ctx, MaxNodeTimeout)
			reply, err := p.Eval(cctx, scripts.LooksLike, group)
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

// bySlot returns keys in groups that one script may take: all of them on a
// standalone node, those of each hash slot on a cluster's master.
func bySlot(keys []string, cluster bool) [][]string {
	if len(keys) == 0 {
		return nil
	}
	if !cluster {
		return [][]string{keys}
	}
	groups := make(map[int][]string)
	for _, k := range keys {
		s := keyslot.Slot(k)
		groups[s] = append(groups[s], k)
	}
	out := make([][]string, 0, len(groups))
	for _, s := range slices.Sorted(maps.Keys(groups)) {
		out = append(out, groups[s])
	}
	return out
}
