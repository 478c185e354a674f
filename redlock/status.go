package redlock

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/redlockgo/redlock/internal/fanout"
)

// ErrNoMajority means fewer than a majority of the nodes answered Status:
// whether the key is locked cannot be told.
var ErrNoMajority = errors.New("redlock: no majority answered")

// KeyStatus is what the nodes say about a lock key. It is a snapshot: an
// acquisition, extension or release may change it at once.
type KeyStatus struct {
	// Key is the key read.
	Key string
	// Kind is what the key holds on the most nodes where it exists: "lock"
	// (an exclusive lock, a writer, a multi-lock's key), "readers",
	// "permits" (a semaphore), the Redis type of a key of the
	// application's, or "" when it is free on every node that answered.
	Kind string
	// Held reports whether the key is held on a majority of the nodes that
	// count: by one token for a lock, by at least one live reader or
	// permit on each of them for readers and permits. A node the restart
	// quarantine keeps out (NodeStatus.Quarantined) holds nothing that
	// counts: a copy of the key there is no holder.
	Held bool
	// Token is, for a lock, the value found on the most nodes that count
	// (the holder's Lock.Token when Held); "" for readers and permits,
	// which have a token each, and when no such node holds the key.
	Token string
	// Holders counts the nodes that count where the key is held (by
	// Token, for a lock); Needed is the majority, Total the number of
	// nodes, Answered how many of them answered.
	Holders, Needed, Total, Answered int
	// Reserved counts the nodes where the key is reserved for a waiting
	// LockAll (NodeStatus.Reserved): free, yet a call that came after that
	// waiter is refused there. A reservation is not a hold: it counts in
	// neither Held nor Holders nor Kind.
	Reserved int
	// TTL is how long a majority of the nodes will still hold Token by
	// their own clocks, unless it is extended or released: the Needed-th
	// longest of the holders' remaining TTLs; 0 when not Held, -1 when a
	// majority keep the key without expiry (no lock of this package does
	// that). The holder's Until() is earlier by the drift allowance.
	TTL time.Duration
	// Nodes is what each node said, in node order.
	Nodes []NodeStatus
}

// NodeStatus is one node's view of a lock key.
type NodeStatus struct {
	// Node is the node's index in the pools given to New; Addr its address,
	// without credentials.
	Node int
	Addr string
	// Kind is what the key holds on the node, as KeyStatus.Kind names it.
	Kind string
	// Token is the value under the key for a lock, "" otherwise.
	Token string
	// Leases counts the live holds on the node: 1 for a lock, the live
	// readers or permits, 0 when the key is absent.
	Leases int
	// TTL is the key's remaining time to live, -1 for a key without expiry.
	TTL time.Duration
	// Reserved reports that the key is free on the node but reserved for
	// the waiting LockAll at the head of its queue, until it takes its
	// keys, leaves or stops refreshing it (TTL is what is left): Kind is
	// "", Leases 0, and any other acquisition is refused there, as by a
	// holder (IsContended).
	Reserved bool
	// Err is why the node could not be read (ErrNodeTimeout, a network
	// error), nil when it answered.
	Err error
	// Unverified reports that the restart quarantine (WithQuarantine) is
	// on but cannot age the node, which therefore counts: the server hides
	// its uptime (INFO refused). A restart of the node that lost its locks
	// goes unnoticed. Always false with the quarantine off.
	Unverified bool
	// Quarantined is how much longer the restart quarantine
	// (WithQuarantine) keeps the node out of every majority, judged on
	// what its Pool learned at its latest connection: its yes to an
	// acquisition does not count until then, though it answers reads
	// such as this one. 0 when the node counts, when the quarantine is
	// off, and for a Redis Cluster node (judged per key, at each vote).
	Quarantined time.Duration
}

// Status reads key on every node, in parallel and without changing it, and
// reports whether a lock holds it, on how many nodes and for how long: the
// library's form of redlock status. A key reserved for a waiting LockAll
// is not held (KeyStatus.Reserved says where it is reserved). Each node call is bounded by the node
// timeout (WithNodeTimeout, or MaxNodeTimeout by default), so Status returns
// within it with a minority of the nodes down or silent.
//
// When fewer than a majority answered, it returns what they said with an
// error wrapping ErrNoMajority (a *QuorumError with one *NodeError per node
// that did not answer), and ctx.Err() when ctx ended the call.
func (c *Client) Status(ctx context.Context, key string) (KeyStatus, error) {
	done, err := c.begin()
	if err != nil {
		return KeyStatus{}, err
	}
	defer done()
	if ctx == nil {
		return KeyStatus{}, errors.New("redlock: nil context")
	}
	if key == "" {
		return KeyStatus{}, errors.New("redlock: empty key")
	}
	st := KeyStatus{Key: key, Needed: c.nodes.Quorum(), Total: c.nodes.Len(), Nodes: make([]NodeStatus, c.nodes.Len())}
	nodes := make([]int, c.nodes.Len())
	for i := range nodes {
		nodes[i] = i
		st.Nodes[i] = NodeStatus{Node: i, Addr: c.nodes.Pool(i).Addr()}
	}
	votes := c.each(ctx, nodes, c.nodeTimeout(0), func(ctx context.Context, i int) (bool, error) {
		n := &st.Nodes[i] // each goroutine writes its own node
		err := c.readStatus(ctx, i, key, n)
		if err == nil && n.Kind == "readers" && n.Leases < 0 {
			// Readers: count them, with the readers' key.
			*n = NodeStatus{Node: i, Addr: n.Addr}
			var reply any
			if reply, err = c.env.ReadStatus(ctx, i, key, true); err == nil {
				err = n.parse(reply)
			}
		}
		return err == nil, err
	})
	res := fanout.Result{Votes: votes}
	for _, v := range votes {
		if v.OK {
			res.Yes++
		} else {
			st.Nodes[v.Node].Err = nodeCause(v.Err)
		}
	}
	st.Answered = res.Yes
	for i := range st.Nodes {
		st.Nodes[i].Unverified = c.nodes.Unverified(i)
		st.Nodes[i].Quarantined = c.nodes.Quarantined(i)
	}
	st.tally()
	if st.Answered < st.Needed {
		return st, withContext(c.quorumError("status", ErrNoMajority, res), ctx.Err())
	}
	return st, nil
}

// readStatus reads key on node i into n with scripts.Status on the key
// alone (a readers key reports Leases -1).
func (c *Client) readStatus(ctx context.Context, i int, key string, n *NodeStatus) error {
	reply, err := c.env.ReadStatus(ctx, i, key, false)
	if err != nil {
		return err
	}
	return n.parse(reply)
}

// parse reads the reply of scripts.Status: {value or false, PTTL in ms,
// kind, leases}.
func (n *NodeStatus) parse(reply any) error {
	a, ok := reply.([]any)
	if !ok || len(a) != 4 {
		return fmt.Errorf("redlock: unexpected status reply %v", reply)
	}
	pttl, ok1 := a[1].(int64)
	kind, ok2 := a[2].(string)
	leases, ok3 := a[3].(int64)
	if !ok1 || !ok2 || !ok3 {
		return fmt.Errorf("redlock: unexpected status reply %v", reply)
	}
	if kind == "" {
		return nil // absent
	}
	n.TTL = -1
	if pttl >= 0 {
		n.TTL = time.Duration(pttl) * time.Millisecond
	}
	if kind == "reserved" {
		n.Reserved = true // free: nobody holds it
		return nil
	}
	n.Kind, n.Leases = kind, int(leases)
	if kind == "lock" {
		if n.Token, ok = a[0].(string); !ok {
			return fmt.Errorf("redlock: unexpected value %v", a[0])
		}
	}
	return nil
}

// tally finds the kind on the most nodes and, for a lock, the token on the
// most nodes (the first to get there, in node order, on a tie), whether a
// majority holds it, and how long a majority keeps it.
func (st *KeyStatus) tally() {
	kinds := map[string]int{}
	for _, n := range st.Nodes {
		if n.Err == nil && n.Reserved {
			st.Reserved++
		}
		if n.Err == nil && n.Kind != "" {
			if kinds[n.Kind]++; kinds[n.Kind] > kinds[st.Kind] {
				st.Kind = n.Kind
			}
		}
	}
	// A quarantined node's copy holds no lock that counts: not a holder.
	holds := func(n NodeStatus) bool {
		return n.Err == nil && n.Quarantined == 0 && n.Kind == st.Kind && n.Leases > 0
	}
	if st.Kind == "lock" {
		count := map[string]int{}
		for _, n := range st.Nodes {
			if holds(n) {
				if count[n.Token]++; count[n.Token] > st.Holders {
					st.Token, st.Holders = n.Token, count[n.Token]
				}
			}
		}
		holds = func(n NodeStatus) bool {
			return n.Err == nil && n.Quarantined == 0 && n.Kind == "lock" && n.Token == st.Token
		}
	} else {
		for _, n := range st.Nodes {
			if holds(n) {
				st.Holders++
			}
		}
	}
	st.Held = st.Holders >= st.Needed
	if !st.Held {
		return
	}
	var ttls []time.Duration
	for _, n := range st.Nodes {
		if holds(n) {
			ttls = append(ttls, n.TTL)
		}
	}
	// Longest first, no expiry (-1) longest of all.
	length := func(d time.Duration) time.Duration {
		if d < 0 {
			return math.MaxInt64
		}
		return d
	}
	slices.SortFunc(ttls, func(a, b time.Duration) int { return cmp.Compare(length(b), length(a)) })
	st.TTL = ttls[st.Needed-1]
}
