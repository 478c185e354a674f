package pool

// What an adapter of another Redis client implements or receives, beside the
// Pool interface itself. Users of the lock never call these.

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
)

// Script is for adapters: a Lua script, with its SHA1 digest computed once,
// as Pool.Eval receives it.
type Script struct {
	src  string
	hash string
}

// NewScript returns a Script for src, for adapters and tools that run their
// own scripts through Pool.Eval.
func NewScript(src string) *Script {
	sum := sha1.Sum([]byte(src))
	return &Script{src: src, hash: hex.EncodeToString(sum[:])}
}

// Source returns the script's Lua source.
func (s *Script) Source() string { return s.src }

// Hash returns the hex SHA1 digest under which Redis caches the script.
func (s *Script) Hash() string { return s.hash }

// Notifier is for adapters: an optional interface of a Pool that can receive
// messages published on channels. The lock uses it to tell waiters that a
// release handed them the key: without it, waiters learn it at their next
// round. Users of the lock never call it.
type Notifier interface {
	// Listen returns a Listener with no channels yet. It must return at
	// once or by ctx's end: a Listener connects in the background.
	Listen(ctx context.Context) (Listener, error)
}

// Listener is for adapters: one subscription connection to a node, as a
// Notifier returns it.
type Listener interface {
	// Subscribe adds channels. It may return before the node confirmed
	// them, and must return by ctx's end whatever the node does.
	Subscribe(ctx context.Context, channels ...string) error
	// Unsubscribe removes channels, with the same bound.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Messages delivers the messages received; it is closed when the
	// Listener is closed. Messages that find it full may be dropped.
	Messages() <-chan Message
	// Close ends the subscription and its goroutines, promptly whatever
	// the node does.
	Close() error
}

// SubscriptionState is for adapters: an optional interface of a Listener
// that can tell whether its subscriptions are in force. The lock asks it
// before it skips a round it would otherwise send to the node: a waiter that
// will hear of a release there need not ask.
type SubscriptionState interface {
	// Subscribed reports whether the node confirmed the subscription to
	// channel on the connection open now. It never blocks on I/O.
	Subscribed(channel string) bool
}

// Message is for adapters: one message received by a Listener.
type Message struct {
	Channel string
	Payload string
}
