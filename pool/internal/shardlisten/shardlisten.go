// Package shardlisten is the part of a cluster listener for sharded pub/sub
// that both client adapters share: which sharded channels the caller wants,
// which shard master each is placed on, one connection per such shard, and
// the goroutine that keeps them placed while slots move. The adapter gives
// the transport: how to ask the cluster whether it knows SSUBSCRIBE, how to
// open a connection to a shard, and how to place channels on their shards.
//
// A Set is started once and closed once:
//
//	s := shardlisten.New(shardlisten.Config[*conn]{Probe: probe, NewShard: dial, Place: place, Closed: errClosed})
//	s.Start()
//	defer s.Close()
//	_ = s.SSubscribe(ctx, "{orders}:grant")
package shardlisten

import (
	"context"
	"sync"
	"time"
)

// Bounds of the placement of sharded channels.
const (
	// PlaceTimeout bounds one step of a placement (the probe for sharded
	// pub/sub, a look-up of a channel's shard, a subscription), unless an
	// SSubscribe allowed less.
	PlaceTimeout = 2 * time.Second
	// PlaceEvery is how often channels the shards have not confirmed are
	// placed again, and the probe retried; settled, a Set only wakes for a
	// change.
	PlaceEvery = 250 * time.Millisecond
)

// Shard is a connection to one shard master that subscribes sharded
// channels, reconnecting by itself until Close.
type Shard interface {
	// Subscribed reports whether the shard confirmed channel.
	Subscribed(channel string) bool
	// Wants returns the channels asked of the shard and not unsubscribed.
	Wants() []string
	// Unsubscribe stops asking the shard for channels, within ctx.
	Unsubscribe(ctx context.Context, channels ...string) error
	// Close ends the connection; it returns once it is ended.
	Close() error
}

// Config is the adapter's part of a Set. Every field but WriteTimeout is
// required.
type Config[S Shard] struct {
	// Probe asks the cluster, within ctx, whether it knows SSUBSCRIBE.
	// known is false when it had no answer: it is asked again later. A
	// refusal (an ACL without COMMAND) is an answer: not sharded.
	Probe func(ctx context.Context) (sharded, known bool)
	// NewShard returns a running connection to the shard master at addr.
	// It is called with the Set's lock held, so must not call the Set.
	NewShard func(addr string) S
	// Place subscribes each of pending (channels no shard has confirmed)
	// on the master that owns its slot now, with [Set.Claim], and reports
	// whether every one is confirmed. ctx ends at Close.
	Place func(ctx context.Context, pending []string) bool
	// Closed is the error of SSubscribe and SUnsubscribe after Close.
	Closed error
	// WriteTimeout, if not zero, bounds each UNSUBSCRIBE sent to a shard
	// too, when it is shorter than a placement step.
	WriteTimeout time.Duration
}

// Set keeps sharded channels subscribed on the shard masters that own
// their slots. Its goroutine (Start) does all the I/O: no caller ever
// waits on a shard. Its methods are safe for concurrent use.
type Set[S Shard] struct {
	cfg    Config[S]
	ctx    context.Context // ends at Close
	cancel context.CancelFunc
	kick   chan struct{} // buffered: asks for a pass
	placed chan struct{} // closed when the goroutine has returned

	mu      sync.Mutex
	bound   time.Duration // of each placement step: the shortest SSubscribe allowed, at most PlaceTimeout
	probed  bool
	sharded bool
	closing bool
	wanted  map[string]string // sharded channel -> address of its shard ("" none yet)
	shards  map[string]S      // by address
}

// New returns a Set with no channels. Nothing runs until Start.
func New[S Shard](cfg Config[S]) *Set[S] {
	ctx, cancel := context.WithCancel(context.Background())
	return &Set[S]{
		cfg:    cfg,
		ctx:    ctx,
		cancel: cancel,
		kick:   make(chan struct{}, 1),
		placed: make(chan struct{}),
		bound:  PlaceTimeout,
		wanted: make(map[string]string),
		shards: make(map[string]S),
	}
}

// Start starts the goroutine that probes the cluster and places the
// channels. Close stops it. Start is called once.
func (s *Set[S]) Start() { go s.run() }

// Sharded implements pool.ShardedListener: whether the cluster was found
// to know SSUBSCRIBE. It is false until the probe answered, and false for
// good once a shard refused SSUBSCRIBE as an unknown command.
func (s *Set[S]) Sharded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sharded
}

// SSubscribe implements pool.ShardedListener. It returns at once, or the
// Closed error after Close: the shards are told in the background, each
// step bounded by the time ctx had left, if shorter than PlaceTimeout.
func (s *Set[S]) SSubscribe(ctx context.Context, channels ...string) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return s.cfg.Closed
	}
	if d, ok := ctx.Deadline(); ok {
		s.bound = min(s.bound, max(time.Until(d), time.Millisecond))
	}
	for _, ch := range channels {
		if _, ok := s.wanted[ch]; !ok {
			s.wanted[ch] = ""
		}
	}
	s.mu.Unlock()
	s.Poke()
	return nil
}

// SUnsubscribe implements pool.ShardedListener. It returns at once, or
// the Closed error after Close: the shards are told in the background, in
// order with the subscriptions.
func (s *Set[S]) SUnsubscribe(_ context.Context, channels ...string) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return s.cfg.Closed
	}
	for _, ch := range channels {
		delete(s.wanted, ch)
	}
	s.mu.Unlock()
	s.Poke()
	return nil
}

// Subscribed reports whether the shard channel is placed on confirmed it.
func (s *Set[S]) Subscribed(channel string) bool {
	s.mu.Lock()
	sh, ok := s.shards[s.wanted[channel]]
	s.mu.Unlock()
	return ok && sh.Subscribed(channel)
}

// Poke asks for a pass, without waiting.
func (s *Set[S]) Poke() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// StepBound returns the bound of one placement step.
func (s *Set[S]) StepBound() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bound
}

// Close stops the goroutine, then closes the shard connections. Later
// SSubscribe and SUnsubscribe calls return the Closed error. It is called
// after Start (it waits for Start's goroutine); a second call does nothing.
func (s *Set[S]) Close() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	s.cancel()
	<-s.placed
	s.mu.Lock()
	shards := s.shards
	s.shards = nil
	s.mu.Unlock()
	for _, sh := range shards {
		_ = sh.Close()
	}
}
