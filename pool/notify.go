package pool

import (
	"context"
	"crypto/tls"
	"errors"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Listen implements Notifier for the go-redis adapter of a *redis.Client or
// a *redis.ClusterClient.
//
// go-redis's own PubSub is not used: its Subscribe, Unsubscribe and Close
// wait on a mutex that its receiving goroutine holds while it dials, for up
// to the dial timeout, whatever their context says. The Listener here owns
// one connection of its own instead, dialled in a goroutine of its own with
// the client's address, TLS and credentials: Subscribe and Unsubscribe only
// write to it, with a deadline, when it is up (and the channels are sent
// again after each reconnection), and Close closes it and cancels the dial.
// Messages published while it is down are lost, which the lock tolerates.
//
// On a cluster the plain channels' connection goes to one of the client's
// seed addresses, the next one at each reconnection: a Redis Cluster
// delivers a PUBLISH to the subscribers of every shard. The Listener is
// then a ShardedListener too (sharded.go): sharded channels are subscribed
// on the masters that own their slots, each on a connection of its own
// made the same way.
func (g *goRedis) Listen(ctx context.Context) (Listener, error) {
	var dial func(context.Context) (net.Conn, error)
	var auth func(context.Context) ([]string, error)
	switch c := g.client.(type) {
	case nil:
		return nil, errNilClient
	case *redis.Client:
		dial, auth = dialer(c.Options()), login(c.Options())
	case *redis.ClusterClient:
		o := c.Options()
		if len(o.Addrs) == 0 {
			return nil, errors.New("pool: cluster client without addresses")
		}
		dial, auth = seedDialer(o), login(seedOptions(o, o.Addrs[0]))
	default:
		return nil, errors.New("pool: notifications need a *redis.Client or a *redis.ClusterClient")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c, ok := g.client.(*redis.ClusterClient); ok {
		return listenCluster(c, dial, auth), nil
	}
	l := newListener(dial, auth, plainCommands, make(chan Message, messageBuffer), true)
	go l.run()
	return l, nil
}

// newListener returns a listener that runs once run is started: cmds are
// its subscription commands, out where it delivers, closed by run's end
// if owned.
func newListener(dial func(context.Context) (net.Conn, error), auth func(context.Context) ([]string, error),
	cmds commands, out chan Message, owned bool) *listener {
	l := &listener{
		dial:     dial,
		login:    auth,
		cmds:     cmds,
		out:      out,
		ownsOut:  owned,
		done:     make(chan struct{}),
		channels: make(map[string]bool),
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// commands are the subscription commands of a listener and the kinds of
// the pushes that answer them.
type commands struct {
	subscribe, unsubscribe   string // the commands
	subscribed, unsubscribed string // their confirmations
	message                  string // a message's push
	// oneSlot: a command may name channels of one hash slot only
	// (SSUBSCRIBE answers CROSSSLOT otherwise), so each channel is sent in
	// a command of its own, all in one write.
	oneSlot bool
}

// encode returns cmd over channels as the bytes to write: one command, or
// one per channel for commands of one slot.
func (c commands) encode(cmd string, channels []string) []byte {
	if !c.oneSlot {
		return appendCommand(nil, append([]string{cmd}, channels...))
	}
	var b []byte
	for _, ch := range channels {
		b = appendCommand(b, []string{cmd, ch})
	}
	return b
}

var (
	plainCommands = commands{subscribe: "SUBSCRIBE", unsubscribe: "UNSUBSCRIBE",
		subscribed: "subscribe", unsubscribed: "unsubscribe", message: "message"}
	shardedCommands = commands{subscribe: "SSUBSCRIBE", unsubscribe: "SUNSUBSCRIBE",
		subscribed: "ssubscribe", unsubscribed: "sunsubscribe", message: "smessage", oneSlot: true}
)

// seedOptions returns the options of a connection to one node of a
// cluster: its address, the cluster's dialer, TLS and credentials.
func seedOptions(o *redis.ClusterOptions, addr string) *redis.Options {
	d := o.Dialer
	if d == nil {
		d = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 5 * time.Minute}).DialContext
	}
	return &redis.Options{
		Network: "tcp", Addr: addr, Dialer: d, TLSConfig: o.TLSConfig,
		Username: o.Username, Password: o.Password,
		CredentialsProvider:        o.CredentialsProvider,
		CredentialsProviderContext: o.CredentialsProviderContext,
	}
}

// seedDialer dials the cluster's seed addresses in turn, one per call.
func seedDialer(o *redis.ClusterOptions) func(context.Context) (net.Conn, error) {
	dials := make([]func(context.Context) (net.Conn, error), len(o.Addrs))
	for i, addr := range o.Addrs {
		dials[i] = dialer(seedOptions(o, addr))
	}
	var next atomic.Uint32
	return func(ctx context.Context) (net.Conn, error) {
		return dials[int(next.Add(1)-1)%len(dials)](ctx)
	}
}

// Bounds of the listener's connection.
const (
	messageBuffer = 256
	dialTimeout   = 5 * time.Second
	writeTimeout  = time.Second
	// idleTimeout is how long a connection may stay silent before the
	// listener PINGs it; a PING unanswered for as long again ends it.
	idleTimeout = 15 * time.Second
	minRedial   = 50 * time.Millisecond
	maxRedial   = 2 * time.Second
)

// dialer returns how to open a connection like the client's: its own
// dialer without TLS; with TLS, a dial and handshake that honour the
// context (go-redis's default TLS dial does not).
func dialer(o *redis.Options) func(context.Context) (net.Conn, error) {
	network, addr := o.Network, o.Addr
	if network == "" {
		network = "tcp"
	}
	if o.TLSConfig == nil {
		return func(ctx context.Context) (net.Conn, error) { return o.Dialer(ctx, network, addr) }
	}
	cfg := o.TLSConfig.Clone()
	return func(ctx context.Context) (net.Conn, error) {
		raw, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		conn := tls.Client(raw, cfg)
		if err := conn.HandshakeContext(ctx); err != nil {
			raw.Close()
			return nil, err
		}
		return conn, nil
	}
}

// login returns the AUTH command for the client's credentials, or nil.
func login(o *redis.Options) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		user, pass := o.Username, o.Password
		switch {
		case o.CredentialsProviderContext != nil:
			var err error
			if user, pass, err = o.CredentialsProviderContext(ctx); err != nil {
				return nil, err
			}
		case o.CredentialsProvider != nil:
			user, pass = o.CredentialsProvider()
		}
		switch {
		case pass == "" && user == "":
			return nil, nil
		case user == "":
			return []string{"AUTH", pass}, nil
		}
		return []string{"AUTH", user, pass}, nil
	}
}

// listener is a Listener over one connection at a time.
type listener struct {
	dial    func(context.Context) (net.Conn, error)
	login   func(context.Context) ([]string, error)
	cmds    commands
	out     chan Message
	ownsOut bool // run closes out when it returns
	// changed, if set, is called (without l.mu) when the node refused a
	// command or dropped a subscription: a cluster listener then looks
	// for the channel's new shard (sharded.go).
	changed func(refusal string)

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	done   chan struct{} // closed when run has returned

	wmu sync.Mutex // serialises writes on conn

	mu       sync.Mutex
	closed   bool
	channels map[string]bool // what the caller subscribed to
	conn     net.Conn        // the usable connection; nil while there is none
	// confirmed holds the channels the node confirmed on conn.
	confirmed map[string]bool
}

// Subscribed implements SubscriptionState.
func (l *listener) Subscribed(channel string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.confirmed[channel]
}

func (l *listener) Messages() <-chan Message { return l.out }

// Subscribe implements Listener: it records the channels and, when the
// connection is up, sends SUBSCRIBE without waiting for the confirmation.
func (l *listener) Subscribe(ctx context.Context, channels ...string) error {
	return l.change(ctx, l.cmds.subscribe, true, channels)
}

// Unsubscribe implements Listener.
func (l *listener) Unsubscribe(ctx context.Context, channels ...string) error {
	return l.change(ctx, l.cmds.unsubscribe, false, channels)
}

func (l *listener) change(ctx context.Context, cmd string, want bool, channels []string) error {
	if len(channels) == 0 {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return net.ErrClosed
	}
	for _, ch := range channels {
		if want {
			l.channels[ch] = true
		} else {
			delete(l.channels, ch)
		}
	}
	conn := l.conn
	l.mu.Unlock()
	if conn == nil {
		return nil // sent when the connection is up
	}
	return l.writeBytes(ctx, conn, l.cmds.encode(cmd, channels))
}

// write sends one command on conn, by ctx's deadline or writeTimeout.
func (l *listener) write(ctx context.Context, conn net.Conn, args []string) error {
	return l.writeBytes(ctx, conn, appendCommand(nil, args))
}

// writeBytes sends encoded commands on conn, by ctx's deadline or
// writeTimeout.
func (l *listener) writeBytes(ctx context.Context, conn net.Conn, b []byte) error {
	deadline := time.Now().Add(writeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	l.wmu.Lock()
	defer l.wmu.Unlock()
	_ = conn.SetWriteDeadline(deadline)
	_, err := conn.Write(b)
	if err != nil {
		conn.Close() // the reader notices and reconnects
	}
	return err
}

// Wants returns the channels subscribed by the caller.
func (l *listener) Wants() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.channels))
	for ch := range l.channels {
		out = append(out, ch)
	}
	return out
}

// Close implements Listener.
func (l *listener) Close() error {
	l.mu.Lock()
	l.closed = true
	conn := l.conn
	l.mu.Unlock()
	l.cancel()
	if conn != nil {
		conn.Close()
	}
	<-l.done
	return nil
}

// run keeps a connection open until Close, redialling with backoff.
func (l *listener) run() {
	defer close(l.done)
	if l.ownsOut {
		defer close(l.out)
	}
	backoff := minRedial
	for l.ctx.Err() == nil {
		if l.session() {
			backoff = minRedial
			continue
		}
		t := time.NewTimer(backoff/2 + rand.N(backoff/2+1))
		select {
		case <-t.C:
		case <-l.ctx.Done():
			t.Stop()
		}
		backoff = min(2*backoff, maxRedial)
	}
}

// session dials, logs in, subscribes to the channels and reads until the
// connection ends. It reports whether the connection was up.
func (l *listener) session() bool {
	ctx, cancel := context.WithTimeout(l.ctx, dialTimeout)
	conn, err := l.dial(ctx)
	if err != nil {
		cancel()
		return false
	}
	r := newReader(conn)
	err = l.hello(ctx, conn, r)
	cancel()
	if err != nil {
		conn.Close()
		return false
	}
	if !l.publish(conn) {
		return true
	}
	l.read(conn, r)
	l.mu.Lock()
	if l.conn == conn {
		l.conn, l.confirmed = nil, nil
	}
	l.mu.Unlock()
	conn.Close()
	return true
}

// hello authenticates on a new connection.
func (l *listener) hello(ctx context.Context, conn net.Conn, r *reader) error {
	auth, err := l.login(ctx)
	if err != nil || auth == nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(d)
		defer conn.SetDeadline(time.Time{})
	}
	if _, err := conn.Write(appendCommand(nil, auth)); err != nil {
		return err
	}
	_, err = r.value()
	return err
}

// publish makes conn the listener's connection and subscribes it to every
// channel wanted so far. It reports false when the listener was closed.
func (l *listener) publish(conn net.Conn) bool {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		conn.Close()
		return false
	}
	l.conn = conn
	channels := make([]string, 0, len(l.channels))
	for ch := range l.channels {
		channels = append(channels, ch)
	}
	l.mu.Unlock()
	if len(channels) > 0 {
		_ = l.writeBytes(l.ctx, conn, l.cmds.encode(l.cmds.subscribe, channels))
	}
	return true
}

// read delivers messages until the connection fails. A connection silent
// for idleTimeout is PINGed; silent as long again, it is given up.
func (l *listener) read(conn net.Conn, r *reader) {
	pinged := false
	for {
		_ = conn.SetReadDeadline(time.Now().Add(idleTimeout))
		v, err := r.value()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() && !pinged && l.ctx.Err() == nil {
			pinged = true
			if l.write(l.ctx, conn, []string{"PING"}) != nil {
				return
			}
			continue
		}
		var refusal errorReply
		if errors.As(err, &refusal) {
			// A refused command (MOVED for a sharded channel, an unknown
			// command) leaves the connection usable.
			if l.changed != nil {
				l.changed(string(refusal))
			}
			continue
		}
		if err != nil {
			return
		}
		pinged = false
		if handled, dropped := l.confirm(conn, v); handled {
			if dropped && l.changed != nil {
				l.changed("") // the node dropped a channel we want: its slot moved
			}
			continue
		}
		if m, ok := asMessage(v, l.cmds.message); ok {
			select {
			case l.out <- m:
			default: // full: the lock's rounds cover a lost message
			}
		}
	}
}

// confirm records a node's answer to SUBSCRIBE or UNSUBSCRIBE (or their
// sharded twins) on conn, and reports whether v was one, and whether it
// dropped a channel still wanted.
func (l *listener) confirm(conn net.Conn, v any) (handled, dropped bool) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 3 {
		return false, false
	}
	kind, _ := arr[0].(string)
	ch, ok := arr[1].(string)
	if !ok || (kind != l.cmds.subscribed && kind != l.cmds.unsubscribed) {
		return false, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != conn {
		return true, false
	}
	if kind == l.cmds.unsubscribed {
		delete(l.confirmed, ch)
		return true, l.channels[ch]
	}
	if l.confirmed == nil {
		l.confirmed = make(map[string]bool)
	}
	l.confirmed[ch] = l.channels[ch]
	return true, false
}

// asMessage reads a pub/sub push [kind, channel, payload], kind being
// "message" or, for a sharded channel, "smessage".
func asMessage(v any, kind string) (Message, bool) {
	arr, ok := v.([]any)
	if !ok || len(arr) != 3 {
		return Message{}, false
	}
	k, _ := arr[0].(string)
	ch, ok1 := arr[1].(string)
	payload, ok2 := arr[2].(string)
	if k != kind || !ok1 || !ok2 {
		return Message{}, false
	}
	return Message{Channel: ch, Payload: payload}, true
}
