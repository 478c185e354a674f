package redlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/node"
	"github.com/redlockgo/redlock/internal/scripts"
	"github.com/redlockgo/redlock/internal/shardwatch"
	"github.com/redlockgo/redlock/pool"
)

// NodesReport is what CheckNodes found on the nodes: whether a majority of
// them counts now, and what each one is.
type NodesReport struct {
	// Nodes is one entry per pool, in the order given.
	Nodes []NodeCheck
	// Counting is how many nodes count now (NodeCheck.Counts); Needed is
	// the majority.
	Counting, Needed int
	// Quarantine is the restart quarantine the nodes were judged by.
	Quarantine time.Duration
}

// OK reports whether a majority of the nodes counts now: a lock can be
// taken unless it is held.
func (r NodesReport) OK() bool { return r.Counting >= r.Needed }

// NodeCheck is one node, as CheckNodes read it. Unknown fields are zero
// (Uptime -1): the server hid them (INFO or CONFIG renamed or refused).
type NodeCheck struct {
	// Node is the node's index in the pools; Addr its address.
	Node int
	Addr string
	// Err is why the node does not answer the lock's scripts: a network
	// error, ErrNodeTimeout, a refused login (NOAUTH, WRONGPASS) or command
	// (NOPERM). The other fields are then zero. nil when it answered.
	Err error
	// Cluster reports a Redis Cluster node: its answer and clock are read
	// through the cluster's client, the rest on each of its shard masters
	// (Masters). The lock judges a key's master at each vote (the shard
	// check of WithQuarantine), so a cluster node counts for some keys and
	// not for others: Counts reports that every master counts.
	Cluster bool
	// Masters is, for a Cluster node whose Pool lists its masters
	// (pool.Masters: FromURL's redis+cluster pools), one entry per shard
	// master, sorted by address, each with the Node of its cluster: read
	// as a standalone node is, and judged by the shard rule of
	// WithQuarantine. FreshStart is then the shard's declaration
	// (redlock:fresh-start{n}). nil for other nodes, or when the masters
	// could not be listed (MastersErr says why).
	Masters []NodeCheck
	// MastersErr is why a Cluster node's masters were not read.
	MastersErr error
	// TookOver reports, for a shard master, a takeover (failover) in its
	// history, as the shard's marker and its run say: it sits out the
	// quarantine from the takeover's first sight, whatever it persists.
	TookOver bool
	// Version is the server's redis_version.
	Version string
	// RunID is the server's current run; Uptime how long it has run, -1
	// when unknown.
	RunID  string
	Uptime time.Duration
	// Persistence is what CONFIG GET appendonly appendfsync says.
	Persistence pool.Persistence
	// FreshStart reports the fresh-start declaration for RunID
	// (pool.FreshStartKey).
	FreshStart bool
	// MaxmemoryPolicy is CONFIG GET maxmemory-policy; anything but
	// "noeviction" may evict a held lock.
	MaxmemoryPolicy string
	// ClockOffset is the server's TIME less the local clock at the middle
	// of the round trip: rough, to within half of it.
	ClockOffset time.Duration
	// Quarantined is how much longer the restart quarantine keeps the node
	// out of every majority, by the rule the Client applies
	// (WithQuarantine), 0 when it counts.
	Quarantined time.Duration
	// SameServer lists the other nodes that are this node's server under
	// another address (the same run_id, read anew here): a Client counts
	// none of them (ErrNodeSameServer). nil for a Cluster node and its
	// masters.
	SameServer []int
	// Counts reports that the node's yes counts now: it answered, is not
	// quarantined and no other node is its server.
	Counts bool
}

// CheckNodes reads, on every node in parallel, what decides whether it can
// be part of a lock's majority now, and changes nothing. A node that does
// not answer is reported in its NodeCheck.Err; the error is for bad
// arguments only. Of opts, WithQuarantine sets the quarantine the nodes are
// judged by and WithNodeTimeout bounds each command (MaxNodeTimeout
// otherwise); the others are ignored, so a program may pass its Client's.
// Uptime, persistence and declaration are read anew, which needs a
// pool.Commander; a Pool that is not one is only asked the time, and
// counts. Nodes that are one server under several addresses count for
// nothing (NodeCheck.SameServer).
func CheckNodes(ctx context.Context, pools []pool.Pool, opts ...Option) (NodesReport, error) {
	if ctx == nil {
		return NodesReport{}, errors.New("redlock: nil context")
	}
	if len(pools) == 0 {
		return NodesReport{}, errors.New("redlock: no pools")
	}
	cfg := config{driftFactor: DefaultDriftFactor}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.err != nil {
		return NodesReport{}, cfg.err
	}
	timeout := cmp.Or(cfg.nodeTimeout, MaxNodeTimeout)
	r := NodesReport{Nodes: make([]NodeCheck, len(pools)), Needed: len(pools)/2 + 1, Quarantine: quarantineFor(cfg)}
	eachPool(pools, func(i int, p pool.Pool) {
		r.Nodes[i] = checkNode(ctx, i, p, timeout, r.Quarantine)
	})
	sameServers(r.Nodes)
	for _, n := range r.Nodes {
		if n.Counts {
			r.Counting++
		}
	}
	return r, nil
}

// checkNode reads one node: the lock's TIME script first (does it answer
// the lock at all, and its clock), then INFO, CONFIG and the declaration.
func checkNode(ctx context.Context, i int, p pool.Pool, timeout, hold time.Duration) NodeCheck {
	n := NodeCheck{Node: i, Uptime: -1}
	if p == nil {
		n.Err = errors.New("nil pool")
		return n
	}
	n.Addr = p.Addr()
	var err error
	if n.ClockOffset, err = clockOffset(ctx, p, timeout); err != nil {
		n.Err = nodeCause(err)
		return n
	}
	cp, isCluster := p.(pool.Cluster)
	n.Cluster = isCluster && cp.IsCluster()
	if n.Cluster {
		n.checkMasters(ctx, p, timeout, hold)
		return n
	}
	cmd, ok := p.(pool.Commander)
	if !ok {
		n.Counts = true
		return n
	}
	do := func(args ...string) (any, error) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return cmd.Do(cctx, args...)
	}
	id := n.read(do)
	n.Quarantined = node.QuarantineLeft(id, hold, id.Learned)
	n.Counts = n.Quarantined == 0
	return n
}

// checkMasters reads every shard master of the cluster node p (pool.Masters)
// into n.Masters: each counts when the shard rule of WithQuarantine lets
// it (shardwatch.Reign.Left), read without writing the shard's marker. n
// counts when every master does; when the masters cannot be listed, as the
// lock counts the node, per key.
func (n *NodeCheck) checkMasters(ctx context.Context, p pool.Pool, timeout, hold time.Duration) {
	ms, ok := p.(pool.Masters)
	if !ok {
		n.Counts, n.MastersErr = true, errors.New("its Pool does not list the masters (not a pool.Masters)")
		return
	}
	var mu sync.Mutex
	err := ms.EachMaster(ctx, func(ctx context.Context, m pool.Pool) error {
		mc := checkMaster(ctx, n.Node, m, timeout, hold)
		mu.Lock()
		defer mu.Unlock()
		n.Masters = append(n.Masters, mc)
		return nil
	})
	slices.SortFunc(n.Masters, func(a, b NodeCheck) int { return strings.Compare(a.Addr, b.Addr) })
	if err != nil || len(n.Masters) == 0 {
		n.Counts, n.Masters, n.MastersErr = true, nil, cmp.Or(err, errors.New("no master listed"))
		return
	}
	n.Counts = !slices.ContainsFunc(n.Masters, func(m NodeCheck) bool { return !m.Counts })
}

// checkMaster reads one shard master, m, of cluster node i.
func checkMaster(ctx context.Context, i int, m pool.Pool, timeout, hold time.Duration) NodeCheck {
	n := NodeCheck{Node: i, Addr: m.Addr(), Uptime: -1}
	cmd, ok := m.(pool.Commander)
	if !ok {
		n.Err = errors.New("the master's Pool cannot run INFO (not a pool.Commander)")
		return n
	}
	do := func(args ...string) (any, error) {
		cctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		return cmd.Do(cctx, args...)
	}
	var err error
	if n.ClockOffset, err = clockOffset(ctx, m, timeout); err != nil {
		n.Err = nodeCause(err)
		return n
	}
	n.read(do)
	cctx, cancel := context.WithTimeout(ctx, timeout)
	r, err := shardwatch.Look(cctx, m)
	cancel()
	if err != nil {
		n.Err = nodeCause(err)
		return n
	}
	n.FreshStart, n.TookOver = r.Fresh, r.Promoted || r.TookOver
	n.Quarantined = r.Left(hold, n.Persistence == pool.PersistenceAlways)
	n.Counts = n.Quarantined == 0
	return n
}

// clockOffset runs the lock's TIME script on p (a call with no key: on a
// cluster's master Pool, that master) and returns the server's clock less
// the local one at the middle of the round trip; the error is the node's.
func clockOffset(ctx context.Context, p pool.Pool, timeout time.Duration) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	before := time.Now()
	reply, err := p.Eval(cctx, scripts.Time, nil)
	after := time.Now()
	if err != nil {
		return 0, err
	}
	at, err := parseTime(reply)
	if err != nil {
		return 0, err
	}
	return at.Sub(before.Add(after.Sub(before) / 2)).Round(time.Millisecond), nil
}

// read fills in what INFO server, CONFIG GET and the declaration say,
// through do, and returns the identity they make, as a Pool would have
// learned it (pool.Identity): the quarantine's input. A command the server
// refuses leaves its fields unknown.
func (n *NodeCheck) read(do func(args ...string) (any, error)) pool.Identity {
	var id pool.Identity
	info, err := do("INFO", "server")
	id.Learned = time.Now() // as pool.Identity's: when the answer arrived
	if err == nil {
		s, _ := info.(string)
		n.Version, n.RunID = infoField(s, "redis_version"), infoField(s, "run_id")
		if up, err := strconv.Atoi(infoField(s, "uptime_in_seconds")); err == nil && up >= 0 {
			n.Uptime = time.Duration(up) * time.Second
			// As pool.Identity.Started: a second younger, never older.
			id.Started = id.Learned.Add(time.Second - n.Uptime)
		}
	}
	aof, fsync := configValue(do("CONFIG", "GET", "appendonly")), configValue(do("CONFIG", "GET", "appendfsync"))
	switch {
	case aof == "" || fsync == "":
		n.Persistence = pool.PersistenceUnknown
	case aof == "yes" && fsync == "always":
		n.Persistence = pool.PersistenceAlways
	default:
		n.Persistence = pool.PersistencePartial
	}
	n.MaxmemoryPolicy = configValue(do("CONFIG", "GET", "maxmemory-policy"))
	if v, err := do("GET", pool.FreshStartKey); err == nil && n.RunID != "" {
		n.FreshStart = v == n.RunID
	}
	id.RunID, id.Persistence, id.FreshStart = n.RunID, n.Persistence, n.FreshStart
	return id
}

// eachPool runs f for every pool in parallel and returns when all are done.
func eachPool(pools []pool.Pool, f func(i int, p pool.Pool)) {
	var wg sync.WaitGroup
	for i, p := range pools {
		wg.Go(func() { f(i, p) })
	}
	wg.Wait()
}

// parseTime reads scripts.Time's reply, {seconds, microseconds}.
func parseTime(reply any) (time.Time, error) {
	a, ok := reply.([]any)
	if ok && len(a) == 2 {
		sec, err1 := strconv.ParseInt(fmt.Sprint(a[0]), 10, 64)
		usec, err2 := strconv.ParseInt(fmt.Sprint(a[1]), 10, 64)
		if err1 == nil && err2 == nil {
			return time.Unix(sec, usec*1000), nil
		}
	}
	return time.Time{}, fmt.Errorf("redlock: unexpected TIME reply %v", reply)
}

// parseScan reads SCAN's reply, {cursor, {key...}}.
func parseScan(reply any) (string, []string, error) {
	a, ok := reply.([]any)
	if !ok || len(a) != 2 {
		return "", nil, fmt.Errorf("redlock: unexpected SCAN reply %v", reply)
	}
	cursor, _ := a[0].(string)
	ks, _ := a[1].([]any)
	keys := make([]string, len(ks))
	for i, k := range ks {
		keys[i] = fmt.Sprint(k)
	}
	return cursor, keys, nil
}

// infoField returns the value of name in INFO text, "" when absent.
func infoField(text, name string) string {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), name+":"); ok {
			return v
		}
	}
	return ""
}

// configValue returns the one value of a CONFIG GET reply, as a flat array
// (RESP2) or a map (RESP3); "" for an error or a hidden parameter.
func configValue(reply any, err error) string {
	if err != nil {
		return ""
	}
	switch v := reply.(type) {
	case []any:
		if len(v) == 2 {
			return fmt.Sprint(v[1])
		}
	case map[string]any:
		for _, e := range v {
			return fmt.Sprint(e)
		}
	}
	return ""
}
