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
	"github.com/redlockgo/redlock/internal/scripts"
)

// ErrNoMajority means fewer than a majority of the nodes answered Status:
// whether the key is locked cannot be told.
var ErrNoMajority = errors.New("redlock: no majority answered")

// KeyStatus is what the nodes say about a lock key. It is a snapshot: an
// acquisition, extension or release may change it at once.
type KeyStatus struct {
	// Key is the key read.
	Key string
	// Held reports whether one token holds the key on a majority of the
	// nodes: the key is locked.
	Held bool
	// Token is the value found on the most nodes (the holder's Lock.Token
	// when Held), "" when the key is free on every node that answered.
	Token string
	// Holders counts the nodes where Token holds the key; Needed is the
	// majority, Total the number of nodes, Answered how many of them
	// answered.
	Holders, Needed, Total, Answered int
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
	// Token is the value under the key, "" when the key is absent.
	Token string
	// TTL is the key's remaining time to live, -1 for a key without expiry.
	TTL time.Duration
	// Err is why the node could not be read (ErrNodeTimeout, a network
	// error), nil when it answered.
	Err error
}

// Status reads key on every node, in parallel and without changing it, and
// reports whether a lock holds it, on how many nodes and for how long: the
// library's form of redlock status. Each node call is bounded by the node
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
	st := KeyStatus{Key: key, Needed: c.quorum, Total: len(c.pools), Nodes: make([]NodeStatus, len(c.pools))}
	nodes := make([]int, len(c.pools))
	for i := range nodes {
		nodes[i] = i
		st.Nodes[i] = NodeStatus{Node: i, Addr: c.pools[i].Addr()}
	}
	votes := fanout.Each(ctx, &c.wg, nodes, c.nodeTimeout(0), func(ctx context.Context, i int) (bool, error) {
		reply, err := c.pools[i].Eval(ctx, scripts.Status, []string{key})
		if err == nil {
			err = st.Nodes[i].parse(reply) // each goroutine writes its own node
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
	st.tally()
	if st.Answered < st.Needed {
		return st, withContext(c.quorumError("status", ErrNoMajority, res), ctx.Err())
	}
	return st, nil
}

// parse reads the reply of scripts.Status: {value or nil, PTTL in ms}.
func (n *NodeStatus) parse(reply any) error {
	a, ok := reply.([]any)
	if !ok || len(a) != 2 {
		return fmt.Errorf("redlock: unexpected status reply %v", reply)
	}
	pttl, ok := a[1].(int64)
	if !ok {
		return fmt.Errorf("redlock: unexpected PTTL %v", a[1])
	}
	if a[0] == nil {
		return nil // absent
	}
	if n.Token, ok = a[0].(string); !ok {
		return fmt.Errorf("redlock: unexpected value %v", a[0])
	}
	n.TTL = -1
	if pttl >= 0 {
		n.TTL = time.Duration(pttl) * time.Millisecond
	}
	return nil
}

// tally finds the token on the most nodes (the first to get there, in node
// order, on a tie) and how long a majority keeps it.
func (st *KeyStatus) tally() {
	count := map[string]int{}
	for _, n := range st.Nodes {
		if n.Err != nil || n.Token == "" {
			continue
		}
		count[n.Token]++
		if count[n.Token] > st.Holders {
			st.Token, st.Holders = n.Token, count[n.Token]
		}
	}
	st.Held = st.Holders >= st.Needed
	if !st.Held {
		return
	}
	var ttls []time.Duration
	for _, n := range st.Nodes {
		if n.Err == nil && n.Token == st.Token {
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
