package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	redsyncgoredis "github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/pool/rueidispool"
	"github.com/redlockgo/redlock/redlock"
)

// The implementations, by the names the tables and benchmarks use.
const (
	Ours    = "redlock"
	Redsync = "redsync"
	Floor   = "floor"
)

// locker is one implementation under measurement. Lock takes key for TTL as
// the implementation does by default (waiting and retrying while another
// holds it); Unlock releases what Lock returned. The held value is a
// pointer, so passing it as an interface allocates nothing.
type locker interface {
	Lock(ctx context.Context, key string) (held any, err error)
	Unlock(ctx context.Context, held any) error
}

// route is how an implementation's clients reach the nodes.
type route int

const (
	// viaProxy goes through each node's fault-injecting proxy (Node.Addr):
	// the route every fault scenario needs.
	viaProxy route = iota
	// direct goes straight to the Redis server, with the dialer of the
	// node's own direct client (Node.Client), so that the in-process proxy's
	// CPU and allocations are not charged to the client measured.
	direct
)

func (r route) String() string {
	if r == direct {
		return "direct"
	}
	return "proxy"
}

// fleet creates the clients and lockers of one scenario and closes them all,
// last created first.
type fleet struct {
	c       *cluster.Cluster
	route   route
	closers []func() error
}

func newFleet(c *cluster.Cluster, r route) *fleet { return &fleet{c: c, route: r} }

func (f *fleet) onClose(fn func() error) { f.closers = append(f.closers, fn) }

// close closes everything the fleet created.
func (f *fleet) close() error {
	var errs []error
	for _, fn := range slices.Backward(f.closers) {
		errs = append(errs, fn())
	}
	f.closers = nil
	return errors.Join(errs...)
}

// options returns go-redis options for node n on the fleet's route. tuned
// applies the settings pool.FromURL uses (deadlines from the context, no
// resend, one dial attempt); otherwise they are go-redis's defaults, as a
// redsync user would write them.
func (f *fleet) options(n *cluster.Node, tuned bool) *redis.Options {
	o := &redis.Options{Addr: n.Addr()}
	if tuned {
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
		o.DialerRetries = 1
	}
	if f.route == direct {
		// Addr stays the proxy's, as a distinct name; the dialer ignores it.
		o.Dialer = n.Client().Options().Dialer
	}
	return o
}

// client returns a new go-redis client for node n.
func (f *fleet) client(n *cluster.Node, tuned bool) *redis.Client {
	rc := redis.NewClient(f.options(n, tuned))
	f.onClose(rc.Close)
	return rc
}

// clients returns one new go-redis client per node.
func (f *fleet) clients(tuned bool) []*redis.Client {
	out := make([]*redis.Client, f.c.Len())
	for i, n := range f.c.Nodes() {
		out[i] = f.client(n, tuned)
	}
	return out
}

// pools returns this library's pools: pool.FromURL through the proxies, the
// normal deployment, or the same settings on direct connections.
func (f *fleet) pools() ([]pool.Pool, error) {
	if f.route == direct {
		out := make([]pool.Pool, f.c.Len())
		for i, n := range f.c.Nodes() {
			out[i] = pool.New(f.client(n, true))
		}
		return out, nil
	}
	return f.urlPools(func(u string) (pool.Pool, error) { return pool.FromURL(u) })
}

// urlPools opens one pool per node through the proxies with open.
func (f *fleet) urlPools(open func(rawURL string) (pool.Pool, error)) ([]pool.Pool, error) {
	out := make([]pool.Pool, f.c.Len())
	for i, n := range f.c.Nodes() {
		p, err := open(n.URL())
		if err != nil {
			return nil, err
		}
		f.onClose(p.Close)
		out[i] = p
	}
	return out, nil
}

// ours returns this library with its defaults: one Client, shared by every
// goroutine that uses the locker, taking each lock with opts.
func (f *fleet) ours(opts ...redlock.LockOption) (locker, error) {
	return f.oursWith(nil, opts...)
}

// oursWith is ours with Client options.
func (f *fleet) oursWith(copts []redlock.Option, opts ...redlock.LockOption) (locker, error) {
	ps, err := f.pools()
	if err != nil {
		return nil, err
	}
	return f.oursOn(ps, copts, opts)
}

// oursRueidis is ours over the rueidis adapter, through the proxies.
func (f *fleet) oursRueidis(opts ...redlock.LockOption) (locker, error) {
	ps, err := f.urlPools(func(u string) (pool.Pool, error) { return rueidispool.FromURL(u) })
	if err != nil {
		return nil, err
	}
	return f.oursOn(ps, nil, opts)
}

// oursOn is a Client over ps, closed with the fleet.
func (f *fleet) oursOn(ps []pool.Pool, copts []redlock.Option, opts []redlock.LockOption) (locker, error) {
	c, err := redlock.New(ps, copts...)
	if err != nil {
		return nil, fmt.Errorf("redlock.New: %w", err)
	}
	f.onClose(c.Close)
	return oursLocker{c: c, opts: opts}, nil
}

// redsync returns redsync v4 with its defaults over go-redis clients with
// theirs: a new Mutex per lock, as in redsync's examples.
func (f *fleet) redsync() locker {
	var ps []redsyncredis.Pool
	for _, c := range f.clients(false) {
		ps = append(ps, redsyncgoredis.NewPool(c))
	}
	return redsyncLocker{rs: redsync.New(ps...)}
}

// floor returns the raw algorithm over clients with this library's settings.
func (f *fleet) floor() locker {
	fl := newFloor(f.clients(true))
	f.onClose(fl.close)
	return fl
}

type oursLocker struct {
	c    *redlock.Client
	opts []redlock.LockOption
}

func (o oursLocker) Lock(ctx context.Context, key string) (any, error) {
	l, err := o.c.Lock(ctx, key, TTL, o.opts...)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (o oursLocker) Unlock(ctx context.Context, held any) error {
	return held.(*redlock.Lock).Unlock(ctx)
}

type redsyncLocker struct{ rs *redsync.Redsync }

func (r redsyncLocker) Lock(ctx context.Context, key string) (any, error) {
	m := r.rs.NewMutex(key) // expiry: its default, 8s, which is TTL
	if err := m.LockContext(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

func (r redsyncLocker) Unlock(ctx context.Context, held any) error {
	ok, err := held.(*redsync.Mutex).UnlockContext(ctx)
	if !ok && err == nil {
		err = errors.New("redsync: not unlocked")
	}
	return err
}
