package pool

// FromURL returns a Pool for the node at rawURL, with opts (WithTLSConfig,
// WithCredentials) applied in order:
//
//	redis://[[user]:password@]host[:port][/db][?option=value&...]
//	rediss://...   (the same over TLS)
//	redis+cluster://[[user]:password@]host[:port][?addr=host2:port2&...]   (a Redis Cluster: one node)
//
// The client it creates honours context deadlines, never resends a command
// or redials by itself, and connects on first use (unless min_idle_conns
// asks for idle connections); Close on the Pool closes it. In the user name
// and password, "/", "?", "#" and "@" must be percent-encoded, or given
// with WithCredentials. The query takes go-redis's options, each at most
// once; an unknown one, retries (max_retries other than 0 or -1), or a
// value out of the bounds that keep go-redis safe is an error naming the
// option. No error contains the user name or password.
//
// A standalone node's Pool is an Identifier: each new connection reads the
// server's identity, and fails if the user may not run EVAL and EVALSHA; a
// cluster's Pool implements Cluster.
func FromURL(rawURL string, opts ...URLOption) (Pool, error) {
	return fromURL(rawURL, opts)
}
