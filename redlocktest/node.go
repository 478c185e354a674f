package redlocktest

import (
	"context"
	"net"
	"sync"
	"syscall"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/redlockgo/redlock/pool"
)

// node is one in-process Redis server and the go-redis client that reaches
// it over in-memory pipes.
//
// States: up (dials are served) and down (dials are refused, the server is
// closed). Stop moves up -> down, breaking every connection; Start moves
// down -> up, and the server starts again at the next dial. Both hold mu,
// as a dial does, so no dial races a Stop into reviving the server.
type node struct {
	srv    *miniredis.Miniredis // keeps its data across Stop and Start
	client *redis.Client
	pool   pool.Pool

	mu sync.Mutex
	up bool
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
		// As pool.FromURL sets them: context deadlines on the socket, no
		// hidden retries, a down node fails at once.
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		// Nothing a lock needs, and one command fewer per connection.
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	})
	nd.pool = pool.New(nd.client)
	return nd
}

// dial opens an in-memory connection to the server, or refuses it while
// the node is down.
func (nd *node) dial(_ context.Context, network, addr string) (net.Conn, error) {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	if !nd.up {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: pipeAddr(addr), Err: syscall.ECONNREFUSED}
	}
	// Starts the server (without a listener) when it is not running.
	return nd.srv.Dial()
}

// stop closes the server and every connection to it.
func (nd *node) stop() {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	nd.up = false
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

// pipeAddr is the address of a node in dial errors.
type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }
