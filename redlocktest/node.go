package redlocktest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/redlockgo/redlock/pool"
)

// node is one in-process Redis server and the go-redis client that reaches
// it over in-memory pipes.
//
// States: up (dials are served) and down (a dial gets a connection that
// refuses, the server is closed). Stop moves up -> down, breaking every connection; Start moves
// down -> up, and the server starts again at the next dial. Both hold mu,
// as a dial does, so no dial races a Stop into reviving the server.
type node struct {
	srv    *miniredis.Miniredis // keeps its data across Stop and Start
	client *redis.Client
	pool   pool.Pool

	mu    sync.Mutex
	up    bool
	epoch atomic.Uint64 // counts Stops: a connection of an earlier epoch is broken

	// clock, when set (Nodes.SetClock), is the server's time as a function
	// of time.Now, read before each command it is sent (tick).
	clock atomic.Pointer[func(time.Time) time.Time]
}

// newNode returns an up node named addr (its Pool's Addr).
func newNode(addr string) *node {
	nd := &node{srv: miniredis.NewMiniRedis(), up: true}
	// Keys expire as time.Now moves (the bubble's clock under synctest), in
	// step with the TIME the scripts read; by default miniredis only
	// expires keys on FastForward.
	nd.srv.ClockTTL(true)
	nd.client = redis.NewClient(&redis.Options{
		Addr:   addr,
		Dialer: nd.dial,
		// As pool.FromURL sets them: context deadlines on the connection,
		// no hidden retries, one dial per attempt.
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		// Nothing a lock needs, and one command fewer per connection.
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	nd.pool = newKitPool(pool.New(nd.client))
	return nd
}

// kitPool is a node's Pool: pool.New's, which tells the lock its server's
// identity (pool.Identifier) as a node that persists every write, since a
// kit node keeps its data across Stop and Start. So the lock's restart
// quarantine judges it as it judges such a node on Redis, and never finds
// it unverifiable.
type kitPool struct {
	pool.Pool
	pool.Notifier
	pool.Commander
	id pool.Identity
}

// kitRuns numbers the kit's nodes, for their run ids.
var kitRuns atomic.Uint64

func newKitPool(p pool.Pool) *kitPool {
	n, _ := p.(pool.Notifier)
	c, _ := p.(pool.Commander)
	run := fmt.Sprintf("redlocktest-run-%024d", kitRuns.Add(1))
	return &kitPool{Pool: p, Notifier: n, Commander: c,
		id: pool.Identity{RunID: run, Started: time.Now(), Persistence: pool.PersistenceAlways, Learned: time.Now()}}
}

// Identity implements pool.Identifier.
func (k *kitPool) Identity() (pool.Identity, bool) { return k.id, true }

// dial opens an in-memory connection to the server; while the node is down,
// one that refuses (see refused).
func (nd *node) dial(_ context.Context, network, addr string) (net.Conn, error) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if !nd.up {
		return refused{err: &net.OpError{Op: "dial", Net: network, Addr: pipeAddr(addr), Err: syscall.ECONNREFUSED}}, nil
	}
	// Starts the server (without a listener) when it is not running.
	c, err := nd.srv.Dial()
	if err != nil {
		return nil, err
	}
	return &conn{Conn: c, nd: nd, epoch: nd.epoch.Load()}, nil
}

// tick sets the server's time from its clock, if it has one: miniredis
// then reads that time for TIME and counts its keys' TTLs down by how far
// it moved since the last command.
func (nd *node) tick() {
	if clock := nd.clock.Load(); clock != nil {
		nd.srv.SetTime((*clock)(time.Now()))
	}
}

// stop closes the server and every connection to it.
func (nd *node) stop() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if nd.up {
		nd.up = false
		nd.epoch.Add(1)
	}
	nd.srv.Close()
}

// start lets dials through again.
func (nd *node) start() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.up = true
}

// close ends the node for good: the client's connections, then the server.
func (nd *node) close() {
	_ = nd.client.Close()
	nd.stop()
}

// refused is the connection a dial to a down node returns: every read and
// write fails with the error of a refused dial, so the command that needed
// the connection fails with it. It is not a failed dial because go-redis
// stops dialing a node after PoolSize failed dials in a row, and then
// probes it every second from a goroutine of its own until a dial
// succeeds: a node would come back up to a second after Start, and the
// probe could outlive the test (which a synctest bubble reports as a
// deadlock).
type refused struct{ err *net.OpError }

func (r refused) Read([]byte) (int, error)              { return 0, r.err }
func (r refused) Write([]byte) (int, error)             { return 0, r.err }
func (r refused) Close() error                          { return nil }
func (r refused) LocalAddr() net.Addr                   { return pipeAddr("client") }
func (r refused) RemoteAddr() net.Addr                  { return r.err.Addr }
func (r refused) SetDeadline(time.Time) error           { return nil }
func (r refused) SetReadDeadline(time.Time) error       { return nil }
func (r refused) SetWriteDeadline(time.Time) error      { return nil }
func (r refused) SyscallConn() (syscall.RawConn, error) { return nil, r.err }

// pipeAddr is the address of a node in dial errors.
type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

// conn is a client's end of an in-memory connection. It is a syscall.Conn
// only so that go-redis's check of an idle connection, which peeks at the
// socket of a syscall.Conn before reusing it, finds the connections that
// Stop broke, as it finds a closed socket: SyscallConn fails for them, so
// the client dials anew instead of failing a command on them (once per
// idle connection). For the others it returns a RawConn with nothing to
// read: a pipe has no socket to peek at.
type conn struct {
	net.Conn
	nd    *node
	epoch uint64
}

// Write sends b to the server, first setting the server's time by the
// node's clock: the command b carries runs at that time (in a synctest
// bubble, at the same instant, since nothing between the two blocks).
func (c *conn) Write(b []byte) (int, error) {
	c.nd.tick()
	return c.Conn.Write(b)
}

// errBroken is the liveness check's answer for a connection broken by Stop.
var errBroken = errors.New("redlocktest: connection broken by Stop")

// SyscallConn implements syscall.Conn for go-redis's liveness check.
func (c *conn) SyscallConn() (syscall.RawConn, error) {
	if c.nd.epoch.Load() != c.epoch {
		return nil, errBroken
	}
	return quiet{}, nil
}

// quiet is the RawConn of a live pipe: it runs none of the functions it is
// given, so a peek finds nothing to read, which is what a live idle
// connection has.
type quiet struct{}

func (quiet) Control(func(fd uintptr)) error    { return nil }
func (quiet) Read(func(fd uintptr) bool) error  { return nil }
func (quiet) Write(func(fd uintptr) bool) error { return nil }
