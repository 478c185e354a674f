package pool

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Persistence is how much of its data a Redis server keeps across a restart,
// as its configuration says.
type Persistence int

// Persistence values.
const (
	// PersistenceUnknown: the server did not say (CONFIG is renamed or
	// refused, as many managed services do).
	PersistenceUnknown Persistence = iota
	// PersistencePartial: no AOF, or an AOF fsynced less often than every
	// write (appendfsync everysec or no). A restart may lose recent writes.
	PersistencePartial
	// PersistenceAlways: appendonly yes and appendfsync always. Every write
	// acknowledged to a client is on disk; a restart loses none.
	PersistenceAlways
)

// String returns "unknown", "partial" or "always".
func (p Persistence) String() string {
	switch p {
	case PersistenceAlways:
		return "always"
	case PersistencePartial:
		return "partial"
	}
	return "unknown"
}

// FreshStartKey is the key an operator sets, on a server that has just
// started for the first time in a deployment, to the server's run_id
// (INFO server): it declares that no lock was ever granted by an earlier
// run of that server, so the lock client counts it at once instead of
// quarantining it. The declaration binds one run: after a restart the
// run_id differs and the key, if it survived, no longer matches. Like
// every name the library writes, it is under the reserved prefix
// "redlock:", which no lock key may use.
//
//	redis-cli SET redlock:fresh-start "$(redis-cli INFO server | sed -n 's/^run_id:\(.*\)\r$/\1/p')"
const FreshStartKey = "redlock:fresh-start"

// Identity is what a Pool learned of the server behind it when it last
// connected to it.
type Identity struct {
	// RunID is the server's run_id, new at every start; "" when INFO hid it.
	RunID string
	// Started is when the server started, at the latest, on the local
	// clock: the time of the answer less its uptime plus one second. Redis
	// counts uptime as the difference of two whole-second clock readings,
	// which exceeds the true uptime by up to a second; the second added
	// back makes the server look younger, never older. The zero time when
	// INFO hid the uptime.
	Started time.Time
	// Persistence is what CONFIG GET appendonly appendfsync said.
	Persistence Persistence
	// FreshStart reports that FreshStartKey holds RunID.
	FreshStart bool
	// MaxMemoryPolicy is what CONFIG GET maxmemory-policy said
	// (noeviction, allkeys-lru, volatile-ttl, ...); "" when CONFIG is
	// refused. Under any policy but noeviction a server short of memory
	// may evict a lock key before its TTL, which breaks the lock as a
	// restart that loses it does: the lock's Client warns once per node
	// (redlock.WithLogger).
	MaxMemoryPolicy string
	// Learned is when the answer arrived, on the local clock.
	Learned time.Time
	// Err says why a field is unknown (INFO or CONFIG refused); nil when all
	// are known.
	Err error
}

// Identifier is implemented by pools that learn their server's identity
// each time they open a connection. A server restart always breaks the
// connections, so the identity a command's answer was given under is known
// by the time the answer arrives. Pools made by FromURL and FromURLs
// implement it, and so do those of rueidispool.FromURL; pools made by New
// over a client of the caller's do not.
type Identifier interface {
	// Identity returns what the pool learned at its latest connection, and
	// false before its first connection.
	Identity() (Identity, bool)
}

// identityCell keeps the latest Identity of one node; its onConnect is the
// go-redis OnConnect hook that fills it.
type identityCell struct {
	mu  sync.Mutex
	id  Identity
	set bool
}

// Identity implements Identifier.
func (c *identityCell) Identity() (Identity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.id, c.set
}

// onConnect reads INFO server, the persistence and eviction settings and
// the fresh-start key in one round trip on a new connection, before any
// command of the caller uses it, and checks in the same round trip that the
// connection's user may run scripts (scriptProbes): readIdentity. A
// connection error, or a user that may not run EVAL or EVALSHA, fails the
// connection, so no command runs on a server whose identity is not known,
// and no lock key is written that could not be released.
func (c *identityCell) onConnect(ctx context.Context, cn *redis.Conn) error {
	id, err := readIdentity(ctx, cn, true)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.id, c.set = id, true
	c.mu.Unlock()
	return nil
}

// pipeliner is what readIdentity sends its round trip on: a new
// connection (*redis.Conn) or a shard's client (*redis.Client).
type pipeliner interface {
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// readIdentity reads INFO server, the persistence and eviction settings
// and, when conn is set (a new connection of the pool's), the fresh-start
// key and the script probes, in one round trip on cn. Commands the server
// refuses (a renamed CONFIG) leave their fields unknown; a connection error
// is returned, and fails the connection, so that no command runs on a
// server whose identity is not known; so does a refused script probe.
func readIdentity(ctx context.Context, cn pipeliner, conn bool) (Identity, error) {
	var info *redis.StringCmd
	var aof, fsync, policy *redis.MapStringStringCmd
	fresh := redis.NewStringCmd(ctx) // unsent: redis.Nil, no declaration
	fresh.SetErr(redis.Nil)
	var probes []*redis.Cmd
	_, err := cn.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.Info(ctx, "server")
		aof = p.ConfigGet(ctx, "appendonly")
		fsync = p.ConfigGet(ctx, "appendfsync")
		policy = p.ConfigGet(ctx, "maxmemory-policy")
		if conn {
			fresh = p.Get(ctx, FreshStartKey)
			for _, probe := range scriptProbes {
				probes = append(probes, p.Do(ctx, probe.args()...))
			}
		}
		return nil
	})
	errs := []error{info.Err(), aof.Err(), fsync.Err(), policy.Err(), fresh.Err()}
	for _, p := range probes {
		errs = append(errs, p.Err())
	}
	if err != nil && !isServerError(errs...) {
		return Identity{}, fmt.Errorf("pool: reading the server's identity: %w", err)
	}
	for i, p := range probes {
		if err := scriptProbes[i].refused(p.Err()); err != nil {
			return Identity{}, err
		}
	}
	var r identityReplies
	r.info, r.infoErr = info.Result()
	r.aof, r.aofErr = aof.Result()
	r.fsync, r.fsyncErr = fsync.Result()
	r.policy, r.policyErr = policy.Result()
	r.fresh, r.freshErr = fresh.Result()
	return r.identity(time.Now()), nil
}

// identityReplies are a server's answers to the commands that tell its
// identity, each a value or the error the server answered instead, however
// they were read (go-redis's OnConnect, ReadIdentity's RESP).
type identityReplies struct {
	info             string // INFO server
	infoErr          error
	aof, fsync       map[string]string // CONFIG GET appendonly, appendfsync
	aofErr, fsyncErr error
	policy           map[string]string // CONFIG GET maxmemory-policy
	policyErr        error
	fresh            string // GET FreshStartKey
	freshErr         error  // a missing key included
}

// identity builds the Identity the replies tell, learned at now. A refused
// command leaves its fields unknown and says why in Err.
func (r identityReplies) identity(now time.Time) Identity {
	id := Identity{Learned: now}
	var errs []error
	if r.infoErr == nil {
		var err error
		id.RunID, id.Started, err = parseInfoServer(r.info, now)
		errs = append(errs, err)
	} else {
		errs = append(errs, fmt.Errorf("INFO server: %w", r.infoErr))
	}
	var err error
	id.Persistence, err = persistence(r)
	errs = append(errs, err)
	if r.policyErr == nil {
		id.MaxMemoryPolicy = r.policy["maxmemory-policy"]
	} else {
		errs = append(errs, fmt.Errorf("CONFIG GET maxmemory-policy: %w", r.policyErr))
	}
	id.FreshStart = r.freshErr == nil && id.RunID != "" && r.fresh == id.RunID
	id.Err = errors.Join(errs...)
	return id
}

// isServerError reports whether every failed command failed with an error
// reply from the server (refused, renamed), not with a network error.
func isServerError(errs ...error) bool {
	for _, err := range errs {
		var re redis.Error
		if err != nil && !errors.Is(err, redis.Nil) && !errors.As(err, &re) {
			return false
		}
	}
	return true
}

// parseInfoServer reads run_id and uptime_in_seconds from INFO server text.
func parseInfoServer(text string, now time.Time) (string, time.Time, error) {
	var runID string
	uptime := -1
	for line := range strings.Lines(text) {
		k, v, ok := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
		if !ok {
			continue
		}
		switch k {
		case "run_id":
			runID = v
		case "uptime_in_seconds":
			if n, err := strconv.Atoi(v); err == nil && n >= 0 {
				uptime = n
			}
		}
	}
	if uptime < 0 {
		return runID, time.Time{}, errors.New("INFO server: no uptime_in_seconds")
	}
	return runID, now.Add(time.Second - time.Duration(uptime)*time.Second), nil
}

// persistence reads the answers of CONFIG GET appendonly and appendfsync.
func persistence(r identityReplies) (Persistence, error) {
	if r.aofErr != nil {
		return PersistenceUnknown, fmt.Errorf("CONFIG GET appendonly: %w", r.aofErr)
	}
	if r.fsyncErr != nil {
		return PersistenceUnknown, fmt.Errorf("CONFIG GET appendfsync: %w", r.fsyncErr)
	}
	av, aok := r.aof["appendonly"]
	fv, fok := r.fsync["appendfsync"]
	switch {
	case !aok || !fok:
		return PersistenceUnknown, errors.New("CONFIG GET: appendonly or appendfsync hidden")
	case av == "yes" && fv == "always":
		return PersistenceAlways, nil
	}
	return PersistencePartial, nil
}

// identified is an owned go-redis Pool that learns its server's identity
// at every new connection (FromURL, FromURLs). A Pool made by New is not
// one: its connections are the caller's, and the adapter does not see them
// open.
type identified struct {
	*goRedis
	*identityCell // Identity
}

// newIdentified returns an owned go-redis Pool for ropts that learns its
// server's identity at every new connection.
func newIdentified(ropts *redis.Options) *identified {
	cell := &identityCell{}
	ropts.OnConnect = cell.onConnect
	return &identified{goRedis: newGoRedis(redis.NewClient(ropts), true), identityCell: cell}
}
