package rueidispool

import (
	"context"
	"sync"

	"github.com/redis/rueidis"

	"github.com/redlockgo/redlock/pool"
)

// newListener returns a listener that runs once run is started: dial opens
// its connections, cmds are its subscription commands, out is where it
// delivers, closed by Close if owned.
func newListener(addr string, dial func() (rueidis.DedicatedClient, error), cmds commands, out *sink,
	owned bool) *listener {
	l := &listener{
		dial:     dial,
		addr:     addr,
		cmds:     cmds,
		out:      out,
		ownsOut:  owned,
		done:     make(chan struct{}),
		channels: make(map[string]struct{}),
		dialing:  make(chan struct{}), // so that a Subscribe right away waits for the connection
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l
}

// dedicate returns how to open a dedicated connection of client.
// Dedicate dials with no context, bounded by the client's dial timeout. Its
// release func is not needed: DedicatedClient.Close releases the
// connection.
func dedicate(client rueidis.Client) func() (rueidis.DedicatedClient, error) {
	return func() (rueidis.DedicatedClient, error) {
		conn, _ := client.Dedicate()
		return conn, nil
	}
}

// commands are a listener's subscription commands and the kinds of the
// pushes that confirm them.
type commands struct {
	// subscribe and unsubscribe build the commands for channels; a
	// sharded listener sends one command per channel, as a cluster
	// client's builder refuses channels of different slots in one.
	subscribe, unsubscribe   func(b rueidis.Builder, channels []string) rueidis.Commands
	subscribed, unsubscribed string // the kinds of their confirmations
}

var (
	plainCommands = commands{
		subscribe: func(b rueidis.Builder, chs []string) rueidis.Commands {
			return rueidis.Commands{b.Subscribe().Channel(chs...).Build()}
		},
		unsubscribe: func(b rueidis.Builder, chs []string) rueidis.Commands {
			return rueidis.Commands{b.Unsubscribe().Channel(chs...).Build()}
		},
		subscribed: "subscribe", unsubscribed: "unsubscribe",
	}
	shardedCommands = commands{
		subscribe: func(b rueidis.Builder, chs []string) rueidis.Commands {
			out := make(rueidis.Commands, len(chs))
			for i, ch := range chs {
				out[i] = b.Ssubscribe().Channel(ch).Build()
			}
			return out
		},
		unsubscribe: func(b rueidis.Builder, chs []string) rueidis.Commands {
			if len(chs) == 0 {
				return rueidis.Commands{b.Sunsubscribe().Build()}
			}
			out := make(rueidis.Commands, len(chs))
			for i, ch := range chs {
				out[i] = b.Sunsubscribe().Channel(ch).Build()
			}
			return out
		},
		subscribed: "ssubscribe", unsubscribed: "sunsubscribe",
	}
)

// sink is the Messages channel of a listener, shared by a cluster
// listener's connections, which rueidis's reading goroutines may still
// deliver to after the listener's Close.
type sink struct {
	mu     sync.Mutex
	closed bool
	ch     chan pool.Message
}

func newSink() *sink { return &sink{ch: make(chan pool.Message, messageBuffer)} }

// send delivers m unless the sink is closed or full; it never blocks.
func (s *sink) send(m pool.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	select {
	case s.ch <- m:
	default: // a full buffer: the waiters' backoff covers a lost wake-up
	}
}

// close closes the channel, once.
func (s *sink) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}
