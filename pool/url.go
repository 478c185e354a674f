package pool

// FromURL returns a Pool for the node at rawURL, which has the form
//
//	redis://[[user]:password@]host[:port][/db][?option=value&...]
//	rediss://...   (the same over TLS)
//
// then the options (WithTLSConfig, WithCredentials) applied in order. The
// client it creates honours context deadlines on every call and never resends
// a command or redials by itself: the lock decides what to retry. It does not
// connect, unless min_idle_conns asks for idle connections: a node that is
// down, or refuses the credentials, fails each call instead. Close on the
// returned Pool closes that client.
//
// The host is a name, an IPv4 address, or an IPv6 address in brackets
// ([::1]:6379); the port, 6379 if left out, is from 1 to 65535. A host with
// more than one ":" outside brackets (host:6379:1, ::1) is an error.
//
// In the user name and password, "/", "?", "#" and "@" must be
// percent-encoded (%2F, %3F, %23, %40), or given with WithCredentials.
//
// The query takes go-redis's options, each at most once, within these
// bounds; an empty value means go-redis's default:
//
//	db                              0 to 2^31-2, or the path /db, not both
//	protocol                        2 or 3
//	client_name                     printable ASCII, no spaces
//	max_retries                     0 or -1 (FromURL never retries)
//	dial_timeout, pool_timeout      1ms to 10m
//	read_timeout, write_timeout     1ms to 10m, or 0 for none (the context's deadline only)
//	pool_fifo                       true, false, 1 or 0
//	pool_size                       1 to 10000
//	min_idle_conns                  0 to pool_size, max_idle_conns and max_active_conns (if set)
//	max_idle_conns                  0 (no limit) to 10000
//	max_active_conns                0 (no limit) to 10000
//	max_concurrent_dials            1 to pool_size
//	pipeline_pool_size              -1 (none) or 1 to 10000
//	pipeline_read_buffer_size,
//	pipeline_write_buffer_size      1024 to 1048576 bytes
//	conn_max_idle_time (idle_timeout),
//	conn_max_lifetime (max_conn_age) 1ms to 24h, or 0 for no limit
//	conn_max_lifetime_jitter        1ms to conn_max_lifetime, or 0 for none
//	skip_verify                     true, false, 1 or 0; rediss:// without WithTLSConfig only
//
// A duration is written as 500ms or 2s, or as a number of seconds; 0 and
// 0s are the same zero. Any other option, or a value out of bounds, is an
// error naming the option: none is silently replaced. Negative durations
// are out of every bound: go-redis's URL parser reads them as it reads 0,
// where its Options give -1 and -2 meanings of their own. (go-redis itself
// checks none of these bounds and panics, or exhausts memory, on some
// values.)
//
// Errors never contain the user name or password, nor any part of them,
// however malformed the URL: they quote it without userinfo and query, and
// name the option at fault.
//
// A Redis Cluster counts as one node; its URL has the scheme redis+cluster
// (or rediss+cluster) and names seeds, the host and any number of addr
// options, from which the client learns the shards:
//
//	redis+cluster://[[user]:password@]host[:port][?addr=host2:port2&addr=host3:port3&option=value...]
//
// The host may not be left out; each addr is checked as the host is and
// needs a port; a seed given twice is an error; db is refused (a cluster has
// none); the other options are the ones above, applied to the connection to
// every shard. The Pool implements Cluster. Over TLS every shard is checked
// against the first host's name unless WithTLSConfig sets another. The
// client follows MOVED and ASK redirects (up to 3, as a resharding needs)
// and, within the same 3 tries, resends a command whose connection broke or
// failed to dial: a SET NX whose reply was lost then reads as taken, which
// is safe (the attempt may fail; its cleanup releases the key).
//
// The Pool of a standalone node is an Identifier: each new connection first
// reads the server's identity (Identity: run, uptime, persistence,
// maxmemory-policy) and checks that the user may run EVALSHA and EVAL, in
// one round trip. A user whose ACL refuses either (NOPERM) fails the
// connection with an error that names the command, so that no lock key is
// written that it could never release (the check costs two small commands
// per new connection, none per call).
func FromURL(rawURL string, opts ...URLOption) (Pool, error) {
	return fromURL(rawURL, opts)
}
