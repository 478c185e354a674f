package rueidispool

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
	"time"

	"github.com/redlockgo/redlock/pool"
)

// identified is a Pool made by FromURL: an owned adapter that learns its
// server's identity on every connection its client opens
// (pool.Identifier). A Pool made by New is not one: its client's
// connections open where the adapter does not see them.
type identified struct {
	*adapter
	*identity // Identity
}

// identity is what a Pool made by FromURL learned at its latest
// connection.
//
// rueidis has no hook that runs on a connection after its handshake and
// before the caller's commands (go-redis's OnConnect), but every
// connection it opens, pipelined, blocking or dedicated, first comes from
// ClientOption.DialCtxFn. dial reads the identity there, on the fresh
// connection, logged in and in the URL's database, and hands the
// connection to rueidis only once the replies have arrived and the
// identity is stored. That is sound for the quarantine: a server that
// restarts breaks every connection to it, so an answer from a restarted
// server arrives on a connection opened after the restart, whose
// handshake stored the new run's identity before rueidis sent anything on
// it. A connection whose identity cannot be read (a network error, a
// refused login) is closed and its dial fails, so rueidis sends no command
// over it.
type identity struct {
	id atomic.Pointer[pool.Identity] // nil before the first connection
}

// Identity implements pool.Identifier.
func (c *identity) Identity() (pool.Identity, bool) {
	id := c.id.Load()
	if id == nil {
		return pool.Identity{}, false
	}
	return *id, true
}

// login is what a connection's identity is read with: the client's
// credentials and database.
type login struct {
	user, password string
	db             int
}

// dialer returns the DialCtxFn that dials with dial and then reads the
// server's identity on the new connection (pool.ReadIdentity), bounded by
// ctx and the dial timeout, as rueidis bounds its own handshake.
func (c *identity) dialer(dial func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error), l login,
) func(context.Context, string, *net.Dialer, *tls.Config) (net.Conn, error) {
	return func(ctx context.Context, addr string, d *net.Dialer, cfg *tls.Config) (net.Conn, error) {
		conn, err := dial(ctx, addr, d, cfg)
		if err != nil {
			return nil, err
		}
		if err := c.learn(ctx, conn, d.Timeout, l); err != nil {
			_ = conn.Close()
			return nil, err
		}
		return conn, nil
	}
}

// learn reads and stores the identity of conn's server, bounded by ctx and
// timeout (none when not positive). It leaves conn without a deadline, as
// a new connection is.
func (c *identity) learn(ctx context.Context, conn net.Conn, timeout time.Duration, l login) error {
	deadline, ok := ctx.Deadline()
	if timeout > 0 && (!ok || time.Until(deadline) > timeout) {
		deadline = time.Now().Add(timeout)
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	// A context that ends without a deadline cuts the reads too.
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	id, err := pool.ReadIdentity(conn, l.user, l.password, l.db)
	if !stop() {
		return errors.Join(ctx.Err(), err)
	}
	if err != nil {
		return err
	}
	if err := conn.SetDeadline(time.Time{}); err != nil {
		return err
	}
	c.id.Store(&id)
	return nil
}
