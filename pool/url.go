package pool

// FromURL returns a Pool for the node at rawURL, which has the form
//
//	redis://[[user]:password@]host[:port][/db][?option=value...]
//	rediss://...   (the same over TLS)
//
// with the query options go-redis understands (dial_timeout, pool_size, ...),
// then the options (WithTLSConfig, WithCredentials) applied in order. The
// client it creates honours context deadlines on every call and never resends
// a command or redials by itself: the lock decides what to retry. It does not
// connect: a node that is down, or refuses the credentials, fails each call
// instead. Close on the returned Pool closes that client.
//
// Errors never contain the password.
func FromURL(rawURL string, opts ...URLOption) (Pool, error) {
	return fromURL(rawURL, opts)
}
