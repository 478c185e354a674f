package pool

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
)

// Notifier is an optional interface of a Pool that can receive messages
// published on channels. The lock uses it to wake waiters when a holder
// releases: without it, waiters fall back to polling with backoff.
type Notifier interface {
	// Listen opens a dedicated subscription connection with no channels yet.
	Listen(ctx context.Context) (Listener, error)
}

// Listener is one subscription connection to a node.
type Listener interface {
	// Subscribe adds channels. It may return before the node confirmed them.
	Subscribe(ctx context.Context, channels ...string) error
	// Unsubscribe removes channels.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Messages delivers every message received; it is closed when the
	// Listener is closed.
	Messages() <-chan Message
	// Close ends the subscription and stops its goroutines.
	Close() error
}

// Message is one message received by a Listener.
type Message struct {
	Channel string
	Payload string
}

// Listen implements Notifier for the go-redis adapter. The subscription
// reconnects and resubscribes by itself after a connection loss; messages
// published meanwhile are lost, which the lock tolerates.
func (g *goRedis) Listen(ctx context.Context) (Listener, error) {
	if g.client == nil {
		return nil, errNilClient
	}
	ps := g.client.Subscribe(ctx)
	l := &goRedisListener{ps: ps, out: make(chan Message, 64), done: make(chan struct{})}
	in := ps.Channel()
	go l.pump(in)
	return l, nil
}

type goRedisListener struct {
	ps   *redis.PubSub
	out  chan Message
	done chan struct{} // closed when pump has returned
}

// pump forwards messages until go-redis closes in (on Close).
func (l *goRedisListener) pump(in <-chan *redis.Message) {
	defer close(l.done)
	defer close(l.out)
	for m := range in {
		select {
		case l.out <- Message{Channel: m.Channel, Payload: m.Payload}:
		default: // a full buffer: the waiters' backoff covers a lost wake-up
		}
	}
}

func (l *goRedisListener) Subscribe(ctx context.Context, channels ...string) error {
	return l.ps.Subscribe(ctx, channels...)
}

func (l *goRedisListener) Unsubscribe(ctx context.Context, channels ...string) error {
	return l.ps.Unsubscribe(ctx, channels...)
}

func (l *goRedisListener) Messages() <-chan Message { return l.out }

func (l *goRedisListener) Close() error {
	err := l.ps.Close()
	<-l.done
	if errors.Is(err, redis.ErrClosed) {
		return nil
	}
	return err
}
