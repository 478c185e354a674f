// Package lease is the library's lock kinds: how an exclusive lock, an
// owner's hold, a reader, a permit and a multi-lock each take, extend,
// fence and give back a lease on one node. A kind is a value, chosen once
// per lock (the options that change a call, fencing or the lock-delay, are
// fields of it); it reaches the nodes only through the Env it is given,
// and knows nothing of the Client that decides at the majority.
//
// Every script's KEYS and ARGV are built here, from each node's
// keyspace.Naming (keys.go), and every reply shape has one reader
// (replies.go).
package lease

import (
	"context"
	"time"

	"github.com/redlockgo/redlock/internal/node"
)

// Env is what a kind acts on: a Client's nodes and what every script call
// of that Client shares. It is built once, with the Client.
type Env struct {
	// Nodes are the Client's nodes: pools, naming, order of calls.
	Nodes *node.Set
	// Delay is the lock-delay (0: off).
	Delay time.Duration
	// Grants is where a key a release handed to a waiter of this Client
	// is delivered, and the channel such waiters listen on.
	Grants Grants
	// MaxTTL is the Client's longest TTL, recorded on each node that keeps
	// a lease ceiling by the scripts that raise it (keys.go).
	MaxTTL time.Duration

	seen ceilings // what this Client knows of the nodes' lease ceilings (ceiling.go)
}

// NewEnv returns the Env of a Client's nodes.
func NewEnv(nodes *node.Set, delay, maxTTL time.Duration, grants Grants) Env {
	return Env{Nodes: nodes, Delay: delay, MaxTTL: maxTTL, Grants: grants, seen: make(ceilings, nodes.Len())}
}

// Grants is a Client's side of the keys its releases hand to waiters
// (wait.Grants).
type Grants interface {
	// Channel returns the Client's channel: a hand-off to a waiter
	// listening there is read from the reply, not published.
	Channel() string
	// Deliver hands the key granted to the waiter token by node i, in
	// answer to its round seq.
	Deliver(token string, i, seq int)
}

// Kind is how a lease of one kind acts on a node. Its methods run on one
// node each (i), inside a fan-out that decides at the majority.
type Kind interface {
	// Enter takes the places, in the Client's order, of one write per
	// node of nodes (nil: all) for token. The caller runs each slot once.
	Enter(e *Env, token string, nodes []int) []node.Slot
	// Take acquires the lease for token on node i: it reports whether it
	// did and records in t the place taken and the fence counter read in
	// the same step. heal asks for exactly the lease's place, ignoring
	// waiting writers. When refused, it registers w, and names in t.Held
	// the key it found held when it knows it.
	Take(ctx context.Context, e *Env, i int, token string, ttl time.Duration, heal bool, w Watch, t *Take) (bool, error)
	// Extend runs the kind's extend script on node i, with scripts.Extend's
	// codes.
	Extend(ctx context.Context, e *Env, i int, token string, ttl time.Duration) (int64, error)
	// Releaser returns the release of token, for any node: it reports
	// whether the node held the lease. keep is how long, in ms, an
	// exclusive lock's token may not queue again ("": no bound). With wake
	// (an Unlock), a key it leaves free wakes its watchers. A key it hands
	// to a waiter of the Client is delivered to it (Env.Grants).
	Releaser(e *Env, token string, keep any, wake bool) Release
	// RaiseFence raises the fence counter on node i to fence while the
	// lease is live.
	RaiseFence(ctx context.Context, e *Env, i int, token, fence string) (bool, error)
	// Watched returns the keys a blocked attempt watches and an Unlock
	// wakes; the first is the lock's key.
	Watched() []string
	// Places reports whether nodes must agree on a place (a permit's slot,
	// an owner's first hold or re-entry).
	Places() bool
	// Attempt returns the kind for a new attempt (a permit's starting slot).
	Attempt() Kind
	// Placed returns the kind for a lease agreed on place.
	Placed(place string) Kind
	// Token returns a new token for an attempt of this kind.
	Token() string
}

// Take is what a take learned on one node.
type Take struct {
	Place   string // the place taken (a permit's slot); "" for kinds without places
	Counter uint64 // the fence counter read with the take
	Held    string // on a refusal, the key found held, when the kind knows it
}

// Watch is what a take's script on one node needs to register a watcher:
// the watch sets of the call's keys there, the channel, the lease in ms.
// The zero value registers nothing.
type Watch struct {
	Keys    []string
	Channel string
	Lease   int64
	// Queue is how long, in ms, a waiting multi-lock's place in the keys'
	// queues lasts: until its next attempt (0: the call does not wait on).
	Queue int64
}

// Release is one release of a token, built once for every node.
type Release interface {
	Release(ctx context.Context, i int) (bool, error)
}

// releaseFunc adapts a function to Release.
type releaseFunc func(ctx context.Context, i int) (bool, error)

func (f releaseFunc) Release(ctx context.Context, i int) (bool, error) { return f(ctx, i) }
