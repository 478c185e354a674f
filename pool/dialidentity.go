package pool

import (
	"context"
	"errors"
	"net"
	"runtime"
	"sync"
	"syscall"
	"time"
	"weak"

	"github.com/redis/go-redis/v9"
)

// dialIdentity is the identity of the server behind a *redis.Client of the
// caller's (New), read by a dial hook on each connection the client opens,
// before the client's own handshake (ReadIdentity). It tells an identity
// only while every connection that may answer had its identity read:
//
//   - settled: no connection opened without the hook may still answer for
//     a run the hook did not read. A client that never had a connection
//     when the hook was added is settled at once. Otherwise, a dial begun
//     before the hook lasts at most the client's DialTimeout (go-redis
//     loads the hook chain at each dial attempt), and any connection it
//     opened that still answers is to the run alive now: a read that comes
//     after that is the truth for all of them.
//   - not blind: a connection whose identity could not be read (a refused
//     INFO, AUTH through a credentials provider the hook cannot call) went
//     to the client unread, so from then on nothing is told.
//
// Until it tells, the lock's Client calls the node through scripts that
// read the identity themselves (internal/node, witness.go).
type dialIdentity struct {
	opt     *redis.Options
	settles time.Time // settled once a read completes at or after it; zero: settled already

	mu      sync.Mutex
	id      Identity
	set     bool
	settled bool
	blind   bool
}

// dialIdentities holds the one dialIdentity of each client given to New, so
// that a client passed many times carries one hook. Entries go with their
// client.
var dialIdentities sync.Map // weak.Pointer[redis.Client] -> *dialIdentity

// identityOf returns the dialIdentity of c, adding its hook to c the first
// time.
func identityOf(c *redis.Client) *dialIdentity {
	key := weak.Make(c)
	if v, ok := dialIdentities.Load(key); ok {
		return v.(*dialIdentity)
	}
	d := &dialIdentity{opt: c.Options()}
	v, loaded := dialIdentities.LoadOrStore(key, d)
	if loaded {
		return v.(*dialIdentity)
	}
	c.AddHook(d)
	runtime.AddCleanup(c, func(key weak.Pointer[redis.Client]) { dialIdentities.Delete(key) }, key)
	// Read after the hook is in place: a dial begun before it counted a miss
	// first (go-redis's pool), or filled MinIdleConns.
	st := c.PoolStats()
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case st.Hits == 0 && st.Misses == 0 && st.TotalConns == 0 && d.opt.MinIdleConns == 0:
		d.settled = true
	case d.opt.DialTimeout > 0:
		d.settles = time.Now().Add(d.opt.DialTimeout)
	default:
		d.blind = true // no bound on a dial begun before the hook
	}
	return d
}

// Identity implements Identifier: the latest read, while every connection
// that may answer had its identity read.
func (d *dialIdentity) Identity() (Identity, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.id, d.set && d.settled && !d.blind
}

// DialHook reads the identity on each new connection before handing it to
// the client. It never fails a dial the server answered: a refused read
// makes the identity blind instead. A read cut by the network closes the
// connection, whose replies it left unread, and fails the dial.
func (d *dialIdentity) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		user, password, ok := d.credentials(ctx)
		if !ok {
			d.learn(Identity{}, false)
			return conn, nil
		}
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(max(d.opt.DialTimeout, time.Second))
		}
		_ = conn.SetDeadline(deadline)
		id, err := ReadIdentity(conn, user, password, d.opt.DB)
		_ = conn.SetDeadline(time.Time{})
		var u unread
		if errors.As(err, &u) {
			// Replies are left unread: the connection is lost. Its first
			// use fails the client's handshake with err, as it would have
			// failed without the hook (a failed dial would make go-redis
			// back off from dialling).
			_ = conn.Close()
			return lostConn{conn, err}, nil
		}
		d.learn(id, err == nil)
		return conn, nil
	}
}

// ProcessHook implements redis.Hook: commands pass through.
func (d *dialIdentity) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

// ProcessPipelineHook implements redis.Hook: pipelines pass through.
func (d *dialIdentity) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// credentials returns the user and password a new connection logs in
// with, and false when the hook cannot know them (a streaming provider).
func (d *dialIdentity) credentials(ctx context.Context) (user, password string, ok bool) {
	switch o := d.opt; {
	case o.StreamingCredentialsProvider != nil:
		return "", "", false
	case o.CredentialsProviderContext != nil:
		u, p, err := o.CredentialsProviderContext(ctx)
		return u, p, err == nil
	case o.CredentialsProvider != nil:
		u, p := o.CredentialsProvider()
		return u, p, true
	}
	return d.opt.Username, d.opt.Password, true
}

// learn records a read: id when ok, blindness when not. A read of another
// run than the one known is kept only if it keeps the node out at least as
// long (two dials' reads can be handled out of order), so the node is
// judged by the stricter of the two, whichever run is current.
func (d *dialIdentity) learn(id Identity, ok bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !ok {
		d.blind = true
		return
	}
	if !d.set || id.RunID == d.id.RunID || !stricter(d.id, id) {
		d.id, d.set = id, true
	}
	if !d.settled && !d.settles.IsZero() && !id.Learned.Before(d.settles) {
		d.settled = true
	}
}

// lostConn is a connection the identity read lost: closed, it fails every
// read and write with the error that lost it.
type lostConn struct {
	net.Conn
	err error
}

func (c lostConn) Read([]byte) (int, error)  { return 0, c.err }
func (c lostConn) Write([]byte) (int, error) { return 0, c.err }

// SyscallConn fails, so that go-redis's check of an idle connection, which
// looks at the socket of a syscall.Conn before using it, drops a lost one
// and dials anew (a connection dialled for a caller that left can wait
// idle until the server is back).
func (c lostConn) SyscallConn() (syscall.RawConn, error) { return nil, c.err }

// stricter reports whether a server of identity a stays out of the
// majority longer after a restart than one of identity b: a run judged by
// its age (neither persisting every write, nor declared fresh, nor of
// unknown uptime) against one that counts at once, or the younger of two
// judged by age: the rule of internal/node's QuarantineLeft, which pool
// cannot import.
func stricter(a, b Identity) bool {
	atOnce := func(id Identity) bool {
		return id.FreshStart || id.Persistence == PersistenceAlways || id.Started.IsZero()
	}
	if atOnce(a) != atOnce(b) {
		return atOnce(b)
	}
	return !atOnce(a) && a.Started.After(b.Started)
}
