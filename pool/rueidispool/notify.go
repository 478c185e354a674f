package rueidispool

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/pool"
)

// The subscription runs on a connection of its own, taken with
// rueidis.Client.Dedicate and read through DedicatedClient.SetPubSubHooks,
// rather than with Client.Receive:
//
//   - Receive subscribes, over RESP3, on the auto-pipelined connections that
//     carry the lock's commands, so a burst of messages would delay them;
//     and each Receive call is bound to the channels it was given, so adding
//     and removing channels one by one would cost a goroutine and a blocked
//     call per channel.
//   - A dedicated connection takes SUBSCRIBE and UNSUBSCRIBE at any time,
//     hands every message to one hook, and closes the hook's error channel
//     when the connection dies: one goroutine (run) waits on it, then opens
//     a new connection and subscribes again to every channel the caller
//     wants. rueidis's background PING on the connection (ConnWriteTimeout)
//     also turns a node that stopped answering into such an error.
//
// The connection is never given back to rueidis's pool of dedicated
// connections: DedicatedClient.Close closes it (a subscribed connection is
// of no use to anyone else), and so ends rueidis's goroutines for it.

// Retry delays between connection attempts after a failure, doubled after
// each failure up to maxRetry and picked at random in their upper half, so
// that the listeners of many processes do not all reconnect at once to a
// node that restarts.
const (
	minRetry = 50 * time.Millisecond
	maxRetry = time.Second
)

// resubscribeTimeout bounds the SUBSCRIBE sent on a new connection for the
// channels subscribed before it.
const resubscribeTimeout = 10 * time.Second

// messageBuffer is the capacity of Messages(); a message that finds it full
// is dropped, as the go-redis adapter does.
const messageBuffer = 64

var (
	errListenerClosed = errors.New("rueidispool: listener closed")
	errNotConnected   = errors.New("rueidispool: listener not connected; its channels are subscribed once it reconnects")
	errConnLost       = errors.New("rueidispool: subscription connection lost")
)

var _ pool.Notifier = (*adapter)(nil)

// Listen implements pool.Notifier. It returns at once: the Listener's
// goroutine opens its connection, one of the client's dedicated connections
// (Client.Dedicate, counted in BlockingPoolSize) rather than one of the
// auto-pipelined connections that carry the lock's commands. After a
// connection loss or a failed attempt it opens a new one, with backoff, and
// subscribes it again to every channel subscribed so far; messages published
// meanwhile are lost, which the lock tolerates. So a node that is down when
// Listen is called is listened to once it is up. ctx only cancels Listen
// itself.
//
// The connection has the client's options (credentials, TLS, protocol), and
// rueidis PINGs it in the background (ConnWriteTimeout), so that a node that
// stopped answering counts as a connection loss too.
//
// For a client in cluster mode the Listener is a pool.ShardedListener too
// (sharded.go): its plain channels are on one node's connection, its
// sharded channels on a connection to each master that owns one of them.
func (a *adapter) Listen(ctx context.Context) (pool.Listener, error) {
	if a.client == nil {
		return nil, errNilClient
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if a.client.Mode() == rueidis.ClientModeCluster {
		return listenCluster(a.client, a.addr), nil
	}
	l := newListener(a.addr, dedicate(a.client), plainCommands, newSink(), true)
	go l.run()
	return l, nil
}

// listener implements pool.Listener over one dedicated rueidis connection at
// a time.
type listener struct {
	dial    func() (rueidis.DedicatedClient, error)
	addr    string
	cmds    commands
	out     *sink
	ownsOut bool // Close closes out
	// changed, if set, is called (without l.mu) when the node refused a
	// channel or dropped one still wanted: a cluster listener then looks
	// for the channel's shard again (sharded.go).
	changed func(refusal error)
	ctx     context.Context // ends when Close is called
	cancel  context.CancelFunc
	done    chan struct{} // closed when run has returned

	// opMu serialises the subscription changes sent on the connection, so
	// that they reach the node in the order the caller's set changed. Taken
	// before mu; run never waits for opMu before a connection is usable.
	opMu sync.Mutex

	mu       sync.Mutex
	closed   bool
	channels map[string]struct{}     // what the caller subscribed to
	conn     rueidis.DedicatedClient // the usable connection; nil while there is none
	// confirmed holds the channels the node confirmed on conn.
	confirmed map[string]bool
	dialing   chan struct{} // closed when the connection attempt under way ends; nil when none is
}

// run keeps a connection open until Close.
func (l *listener) run() {
	defer close(l.done)
	delay := minRetry
	for {
		conn, lost, err := l.connect()
		if errors.Is(err, errListenerClosed) {
			return
		}
		if err == nil {
			delay = minRetry
			select {
			case <-l.ctx.Done():
				return // Close closes conn
			case <-lost:
			}
		}
		l.drop(conn)
		t := time.NewTimer(delay/2 + rand.N(delay/2+1))
		select {
		case <-l.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		delay = min(2*delay, maxRetry)
	}
}

// connect opens a connection, makes it the listener's, and subscribes it to
// the caller's channels. It returns the connection, if it became the
// listener's, and the channel on which rueidis reports the connection's end.
func (l *listener) connect() (rueidis.DedicatedClient, <-chan error, error) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil, nil, errListenerClosed
	}
	if l.dialing == nil {
		l.dialing = make(chan struct{})
	}
	dialing := l.dialing
	l.mu.Unlock()

	var lost <-chan error
	conn, err := l.dial()
	if err == nil {
		lost = conn.SetPubSubHooks(rueidis.PubSubHooks{
			OnMessage:      l.deliver,
			OnSubscription: func(s rueidis.PubSubSubscription) { l.confirm(conn, s) },
		})
		select {
		case err = <-lost: // a connection that could not be opened reports it at once
			if err == nil {
				err = errConnLost
			}
		default:
		}
	}

	l.mu.Lock()
	l.dialing = nil
	close(dialing)
	if l.closed {
		err = errListenerClosed
	}
	if err != nil {
		l.mu.Unlock()
		if conn != nil {
			conn.Close()
		}
		return nil, nil, err
	}
	l.conn = conn
	l.mu.Unlock()

	if err := l.resubscribe(conn); err != nil {
		return conn, nil, err
	}
	return conn, lost, nil
}

// resubscribe subscribes a new connection to every channel of the caller's.
// A changed set later goes through opMu, after this.
func (l *listener) resubscribe(conn rueidis.DedicatedClient) error {
	l.opMu.Lock()
	defer l.opMu.Unlock()
	l.mu.Lock()
	channels := slices.Collect(maps.Keys(l.channels))
	current := l.conn == conn
	l.mu.Unlock()
	if !current {
		return errListenerClosed // Close took the connection
	}
	if len(channels) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(l.ctx, resubscribeTimeout)
	defer cancel()
	err := l.send(ctx, conn, l.cmds.subscribe, channels)
	if _, ok := rueidis.IsRedisErr(err); ok {
		l.refused(channels, err)
		return nil // the node answered: another connection would get the same answer
	}
	return err
}

// send sends the commands cmd builds for channels on conn and returns the
// first error.
func (l *listener) send(ctx context.Context, conn rueidis.DedicatedClient,
	cmd func(rueidis.Builder, []string) rueidis.Commands, channels []string) error {
	for _, r := range conn.DoMulti(ctx, cmd(conn.B(), channels)...) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// refused tells the cluster listener, if any, that the node refused
// channels with err.
func (l *listener) refused(channels []string, err error) {
	if l.changed == nil {
		return
	}
	l.mu.Lock()
	for _, ch := range channels {
		delete(l.channels, ch)
	}
	l.mu.Unlock()
	l.changed(err)
}

// drop closes conn, unless Close has taken it already.
func (l *listener) drop(conn rueidis.DedicatedClient) {
	if conn == nil {
		return
	}
	l.mu.Lock()
	mine := l.conn == conn
	if mine {
		l.conn, l.confirmed = nil, nil
	}
	l.mu.Unlock()
	if mine {
		conn.Close()
	}
}

// confirm is the connection's subscription hook: it records what the node
// confirmed on conn, for Subscribed.
func (l *listener) confirm(conn rueidis.DedicatedClient, s rueidis.PubSubSubscription) {
	l.mu.Lock()
	if l.conn != conn {
		l.mu.Unlock()
		return
	}
	_, wanted := l.channels[s.Channel]
	dropped := false
	switch s.Kind {
	case l.cmds.subscribed:
		if l.confirmed == nil {
			l.confirmed = make(map[string]bool)
		}
		l.confirmed[s.Channel] = wanted
	case l.cmds.unsubscribed:
		delete(l.confirmed, s.Channel)
		dropped = wanted // the node dropped it: its slot moved
	}
	l.mu.Unlock()
	if dropped && l.changed != nil {
		l.changed(nil)
	}
}

// Wants returns the channels subscribed by the caller.
func (l *listener) Wants() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Collect(maps.Keys(l.channels))
}

// Subscribed implements pool.SubscriptionState.
func (l *listener) Subscribed(channel string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.confirmed[channel]
}

// deliver is the connection's message hook. rueidis calls it from the
// goroutine that reads the connection, so it must not block: a message that
// finds the buffer full is dropped. A message on a channel the caller has
// since unsubscribed from is dropped too.
func (l *listener) deliver(m rueidis.PubSubMessage) {
	l.mu.Lock()
	_, ok := l.channels[m.Channel]
	ok = ok && !l.closed
	l.mu.Unlock()
	if ok {
		l.out.send(pool.Message{Channel: m.Channel, Payload: m.Message})
	}
}

// Subscribe adds channels to the listener's set, which every new connection
// subscribes to, and sends SUBSCRIBE on the current connection. While the
// first connection, or a new one, is being opened, it waits for it (or for
// ctx); while there is none, because the node could not be reached, it
// returns an error at once, and the channels are subscribed on reconnection.
// A node that refuses the channels (an error reply) removes them from the
// set. It returns once the node confirmed the first channel.
func (l *listener) Subscribe(ctx context.Context, channels ...string) error {
	l.opMu.Lock()
	defer l.opMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errListenerClosed
	}
	for _, ch := range channels {
		l.channels[ch] = struct{}{}
	}
	conn, dialing := l.conn, l.dialing
	l.mu.Unlock()
	if len(channels) == 0 {
		return nil
	}
	if conn == nil && dialing != nil {
		select {
		case <-dialing:
		case <-ctx.Done():
			return fmt.Errorf("rueidispool: subscribe on %s: %w (the channels are subscribed once connected)", l.addr, ctx.Err())
		}
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return errListenerClosed
		}
		conn = l.conn
		l.mu.Unlock()
	}
	if conn == nil {
		return errNotConnected
	}
	err := l.send(ctx, conn, l.cmds.subscribe, channels)
	if _, ok := rueidis.IsRedisErr(err); ok {
		l.mu.Lock()
		for _, ch := range channels {
			delete(l.channels, ch)
		}
		l.mu.Unlock()
		if l.changed != nil {
			l.changed(err)
		}
	}
	return err
}

// Unsubscribe removes channels from the listener's set, or all of them when
// none is given, as UNSUBSCRIBE does, and sends UNSUBSCRIBE on the current
// connection, if any. From then on no message on those channels is added to
// Messages(), not even one the node sent before it processed UNSUBSCRIBE.
func (l *listener) Unsubscribe(ctx context.Context, channels ...string) error {
	l.opMu.Lock()
	defer l.opMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return errListenerClosed
	}
	if len(channels) == 0 {
		clear(l.channels)
	}
	for _, ch := range channels {
		delete(l.channels, ch)
	}
	conn := l.conn
	l.mu.Unlock()
	if conn == nil {
		return nil // the next connection subscribes only to what is left
	}
	return l.send(ctx, conn, l.cmds.unsubscribe, channels)
}

// Messages returns the channel of received messages, buffered; it is closed
// by Close.
func (l *listener) Messages() <-chan pool.Message { return l.out.ch }

// Close ends the subscription: it closes Messages(), closes the connection
// and waits for the listener's goroutine, but not for a connection attempt
// in progress (see closeWait), so that it returns promptly whatever the node
// does. Calls after the first return nil.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	if l.ownsOut {
		l.out.close()
	}
	conn := l.conn
	l.conn = nil
	l.mu.Unlock()
	l.cancel()
	if conn != nil {
		conn.Close()
	}
	select {
	case <-l.done:
	case <-time.After(closeWait):
		// The goroutine is opening a connection: rueidis's Dedicate takes
		// no context. It sees the listener closed when the attempt ends,
		// bounded by the client's dial and write timeouts (or at once when
		// the client is closed), closes the connection and returns.
	}
	return nil
}

// closeWait is how long Close waits for the listener's goroutine before it
// leaves it to finish a connection attempt on its own.
const closeWait = 100 * time.Millisecond
