package pool

import (
	"context"
	"net"
)

// WithDialer makes the client FromURL creates dial with d, so that tests,
// the fuzz test above all, create clients without touching the network.
func WithDialer(d func(ctx context.Context, network, addr string) (net.Conn, error)) URLOption {
	return func(c *urlConfig) { c.dialer = d }
}
