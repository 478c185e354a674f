package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Node is one Redis node of a Cluster. Clients reach it through a proxy
// whose address, Addr, stays the same for the node's whole life, across
// Kill, Start and Restart; the proxy also carries the network faults. All
// methods are safe for concurrent use; operations on one node are serialised.
type Node struct {
	index       int
	persistence Persistence
	srv         server
	px          *proxy
	direct      *redis.Client
	firstConfig map[string]string // CONFIG GET * at the start, when the cluster may be reused

	mu     sync.Mutex // serialises lifecycle operations and guards state
	killed bool
	paused bool
}

// ErrKilled is returned by operations that need a running node.
var ErrKilled = errors.New("cluster: node is killed")

func newNode(i int, p Persistence, srv server, px *proxy) *Node {
	n := &Node{index: i, persistence: p, srv: srv, px: px}
	n.direct = redis.NewClient(&redis.Options{
		// The dialer follows the node to wherever it listens now, so the
		// client survives restarts of a container whose port changes.
		Dialer: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, srv.addr())
		},
		DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		DisableIdentity: true,
	})
	return n
}

// Index returns the node's position in the Cluster (and in its pools).
func (n *Node) Index() int { return n.index }

// Addr returns the node's client-facing address (host:port): its proxy.
func (n *Node) Addr() string { return n.px.addr }

// URL returns redis://Addr(), the form pool.FromURL takes.
func (n *Node) URL() string { return "redis://" + n.px.addr }

// Persistence returns how the node keeps data across Kill and Start.
func (n *Node) Persistence() Persistence { return n.persistence }

// Client returns a go-redis client that talks to the node directly, not
// through its proxy, so that network faults do not hide what the node holds.
// It follows the node across restarts. The Cluster closes it; do not.
func (n *Node) Client() *redis.Client { return n.direct }

// Kill stops the node at once (SIGKILL), as in a crash: nothing is saved
// beyond what its persistence had written. Clients get connection errors
// until Start. Killing a killed node does nothing.
func (n *Node) Kill(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.killed {
		return nil
	}
	if err := n.srv.kill(ctx); err != nil {
		return n.errorf("kill", err)
	}
	n.killed, n.paused = true, false
	return nil
}

// Start runs a killed node again with the same data directory, so that it
// comes back with what its persistence kept: nothing, the writes up to the
// last second's fsync, or every acknowledged write. It returns once the node
// answers PING and its proxy leads to it. Starting a running node does
// nothing.
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.killed {
		return nil
	}
	if err := n.srv.start(ctx); err != nil {
		return n.errorf("start", err)
	}
	n.killed = false
	if err := n.px.setUpstream(n.srv.addr()); err != nil {
		return n.errorf("re-point proxy", err)
	}
	return nil
}

// Restart is Kill followed by Start: a crash and an immediate recovery.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.Kill(ctx); err != nil {
		return err
	}
	return n.Start(ctx)
}

// Pause freezes the node (docker pause, or SIGSTOP for a process): its
// connections stay open and accept bytes, but nothing is answered until
// Unpause. Commands sent meanwhile run when it resumes.
func (n *Node) Pause(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.killed {
		return n.errorf("pause", ErrKilled)
	}
	if n.paused {
		return nil
	}
	if err := n.srv.pause(ctx); err != nil {
		return n.errorf("pause", err)
	}
	n.paused = true
	return nil
}

// Unpause resumes a paused node; on a node that is not paused it does
// nothing.
func (n *Node) Unpause(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.paused {
		return nil
	}
	if err := n.srv.unpause(ctx); err != nil {
		return n.errorf("unpause", err)
	}
	n.paused = false
	return nil
}

// errFakeClock is setClock's error on a node without a fake clock.
var errFakeClock = errors.New("cluster: the node has no fake clock (start the cluster WithFakeClocks)")

// SetClock moves the node's wall clock, by which Redis expires keys and
// answers TIME: from now on it reads offset ahead of the real clock and
// advances at rate times its speed. (0, 1) is the real clock again, (d, 1) a
// forward jump by d, (0, 1.5) a clock 50% fast. The setting survives Kill and
// Start (a restarted node starts again from offset). The node's monotonic
// clock is left alone. It fails on a cluster started without WithFakeClocks.
func (n *Node) SetClock(offset time.Duration, rate float64) error {
	if err := n.srv.setClock(offset, rate); err != nil {
		return n.errorf("set clock", err)
	}
	return nil
}

// Partition cuts clients off the node: connections through its proxy are
// closed and new ones refused, until Heal. The node itself keeps running and
// keeps its keys, which expire by their TTL.
func (n *Node) Partition() error {
	n.px.partition()
	return nil
}

// Heal removes every network fault of the node: the partition and all
// latency, blackhole and reset faults.
func (n *Node) Heal() error {
	if err := n.px.heal(); err != nil {
		return n.errorf("heal", err)
	}
	return nil
}

// Delay adds latency d, plus or minus jitter, to the traffic in dir, on open
// connections and new ones. A second Delay on the same direction replaces
// the first.
func (n *Node) Delay(dir Direction, d, jitter time.Duration) error {
	if d < 0 || jitter < 0 || jitter > d {
		return fmt.Errorf("cluster: invalid latency %v ± %v", d, jitter)
	}
	return n.px.toxic("latency", dir, map[string]any{"latency": d.Milliseconds(), "jitter": jitter.Milliseconds()})
}

// Slow makes every round trip to the node d longer: commands reach the
// node at once, and each reply is held back by d.
func (n *Node) Slow(d time.Duration) error { return n.Delay(Downstream, d, 0) }

// Blackhole drops the traffic in dir without closing connections: a
// command or reply that enters is never delivered, as with packets lost
// in a partition. With Downstream only, commands sent on open connections
// still run on the node but their replies never arrive; a new connection
// stalls in its handshake, before any command is sent.
func (n *Node) Blackhole(dir Direction) error {
	return n.px.toxic("timeout", dir, map[string]any{"timeout": 0})
}

// ResetPeer closes every connection through the proxy as soon as data
// flows in dir, before that data is delivered (with a TCP reset on
// connections opened after the call).
func (n *Node) ResetPeer(dir Direction) error {
	return n.px.toxic("reset_peer", dir, map[string]any{"timeout": 0})
}

// Entry is a key as one node holds it.
type Entry struct {
	// Exists reports whether the key is present.
	Exists bool
	// Value is the key's string value.
	Value string
	// TTL is the remaining time to live, or -1 for a key without expiry;
	// 0 for an absent key.
	TTL time.Duration
}

// Peek reads key and its remaining TTL on the node, atomically, through the
// direct client: it changes nothing and ignores the node's network faults.
func (n *Node) Peek(ctx context.Context, key string) (Entry, error) {
	var get *redis.StringCmd
	var pttl *redis.Cmd
	_, err := n.direct.TxPipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, key)
		pttl = p.Do(ctx, "PTTL", key)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return Entry{}, n.errorf("peek", err)
	}
	ms, err := pttl.Int64()
	if err != nil {
		return Entry{}, n.errorf("peek", err)
	}
	if errors.Is(get.Err(), redis.Nil) || ms == -2 {
		return Entry{}, nil
	}
	e := Entry{Exists: true, Value: get.Val(), TTL: time.Duration(ms) * time.Millisecond}
	if ms == -1 {
		e.TTL = -1
	}
	return e, nil
}

// String describes the node and its faults, for logs.
func (n *Node) String() string {
	n.mu.Lock()
	state := "running"
	switch {
	case n.killed:
		state = "killed"
	case n.paused:
		state = "paused"
	}
	n.mu.Unlock()
	parts := append([]string{n.px.addr, n.persistence.String(), state}, n.px.faults()...)
	return fmt.Sprintf("node %d (%s)", n.index, strings.Join(parts, ", "))
}

func (n *Node) errorf(op string, err error) error {
	return fmt.Errorf("cluster: node %d: %s: %w", n.index, op, err)
}

// close releases the node's client and proxy; the backend removes the server.
func (n *Node) close() error {
	n.px.close()
	return n.direct.Close()
}
