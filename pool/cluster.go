package pool

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/pool/internal/redisurl"
)

// The scheme suffix and the seed option of a cluster URL (see FromURL).
// There are no commas in such a URL, so it fits in the CLI's
// comma-separated --nodes.
const (
	clusterSuffix = "+cluster"
	seedOption    = "addr"
)

// clusterScheme returns rawURL's scheme without "+cluster" and true when
// rawURL is a cluster URL.
func clusterScheme(rawURL string) (string, bool) {
	scheme, _, ok := strings.Cut(rawURL, "://")
	if !ok || !strings.HasSuffix(strings.ToLower(scheme), clusterSuffix) {
		return "", false
	}
	return scheme[:len(scheme)-len(clusterSuffix)], true
}

// parseClusterURL returns the go-redis options of a cluster URL, and the URL
// without userinfo and query, for messages ("" when it does not parse).
func parseClusterURL(rawURL string, opts []URLOption) (*redis.ClusterOptions, string, error) {
	base, _ := clusterScheme(rawURL)
	plain := base + rawURL[len(base)+len(clusterSuffix):] // the same URL with scheme redis or rediss
	u, err := redisurl.Parse(plain)
	if err != nil {
		return nil, "", err
	}
	safe := u.Scheme + clusterSuffix + strings.TrimPrefix(redisurl.Redacted(u), u.Scheme)
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, safe, err // redisurl.ParseQuery explains it below
	}
	if u.Hostname() == "" {
		return nil, safe, errors.New("no host: a cluster URL names its first seed, host[:port]")
	}
	first := u.Host
	if u.Port() == "" {
		first = net.JoinHostPort(u.Hostname(), "6379")
	}
	seeds := append([]string{first}, q[seedOption]...)
	q.Del(seedOption)
	if q.Has("db") || strings.Trim(u.Path, "/") != "" {
		return nil, safe, errors.New("a cluster has no db: leave out db and the path")
	}
	seen := map[string]bool{}
	for _, s := range seeds {
		if err := checkSeed(s); err != nil {
			return nil, safe, err
		}
		if seen[nodeKey(s)] {
			return nil, safe, fmt.Errorf("seed %s given twice", s)
		}
		seen[nodeKey(s)] = true
	}
	u.RawQuery = q.Encode()
	ropts, err := goRedisOptions(u, u.String(), opts)
	if err != nil {
		return nil, safe, err
	}
	return clusterOptions(ropts, seeds), safe, nil
}

// checkSeed checks a seed: a host and a port from 1 to 65535. Its error
// names option addr, where every seed but the URL's host (checked by then)
// comes from.
func checkSeed(s string) error {
	u, err := url.Parse("redis://" + s)
	if err != nil || u.Host != s || u.Hostname() == "" || u.Port() == "" {
		return fmt.Errorf("option %s: %s: want host:port", seedOption, redisurl.Quote(s))
	}
	if _, err := redisurl.Parse("redis://" + s); err != nil {
		return fmt.Errorf("option %s: %s: %w", seedOption, redisurl.Quote(s), err)
	}
	return nil
}

// clusterOptions returns cluster options with the settings of o (made by
// goRedisOptions: context deadlines honoured, no retries) and the seeds.
func clusterOptions(o *redis.Options, seeds []string) *redis.ClusterOptions {
	return &redis.ClusterOptions{
		Addrs: seeds, ClientName: o.ClientName, Protocol: o.Protocol,
		Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig, Dialer: o.Dialer,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled, MaxRetries: o.MaxRetries, DialerRetries: o.DialerRetries,
		PoolFIFO: o.PoolFIFO, PoolSize: o.PoolSize, PoolTimeout: o.PoolTimeout,
		MinIdleConns: o.MinIdleConns, MaxIdleConns: o.MaxIdleConns, MaxActiveConns: o.MaxActiveConns,
		MaxConcurrentDials: o.MaxConcurrentDials, ConnMaxIdleTime: o.ConnMaxIdleTime,
		ConnMaxLifetime: o.ConnMaxLifetime, ConnMaxLifetimeJitter: o.ConnMaxLifetimeJitter,
		PipelinePoolSize:        o.PipelinePoolSize,
		PipelineReadBufferSize:  o.PipelineReadBufferSize,
		PipelineWriteBufferSize: o.PipelineWriteBufferSize,
		NewClient:               newShardClient,
		// A dead master answers no MOVED, and go-redis reloads the slot map
		// on its own only this often once in use (60s by default): until
		// then every key of the shard fails, though its replica took over.
		ClusterStateReloadInterval: clusterReloadInterval,
	}
}

// clusterReloadInterval bounds how long a cluster Pool in use keeps
// routing a shard's keys to a master that died: at most one CLUSTER SLOTS
// per interval, and only while the Pool is used.
const clusterReloadInterval = 2 * time.Second

// commandInfoTimeout bounds the COMMAND call by which a go-redis
// ClusterClient learns the commands' key positions. The client asks it of a
// random master on its first command, under a lock that every later
// command waits for, with a 5s deadline of its own: a frozen master would
// hold every key of the cluster that long, whatever their contexts say.
// Bounded, it costs at most this, and the client asks the next master.
const commandInfoTimeout = time.Second

// newShardClient makes the client of one master of a cluster, with its
// COMMAND calls bounded by commandInfoTimeout.
func newShardClient(o *redis.Options) *redis.Client {
	c := redis.NewClient(o)
	c.AddHook(commandInfoBound{})
	return c
}

// commandInfoBound is the redis.Hook that bounds COMMAND (without
// arguments, the form go-redis uses) by commandInfoTimeout.
type commandInfoBound struct{}

func (commandInfoBound) DialHook(next redis.DialHook) redis.DialHook { return next }

func (commandInfoBound) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "command" || len(cmd.Args()) != 1 {
			return next(ctx, cmd)
		}
		ctx, cancel := context.WithTimeout(ctx, commandInfoTimeout)
		defer cancel()
		return next(ctx, cmd)
	}
}

func (commandInfoBound) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
