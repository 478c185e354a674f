package cluster

import (
	"fmt"
	"os"
)

// DefaultNodes is the number of nodes Start runs when WithNodes is not given.
const DefaultNodes = 5

// DefaultImage is the image the containers backend runs when
// REDLOCK_REDIS_IMAGE is unset: the FROM scratch image `make redis-image`
// builds, which needs no registry.
const DefaultImage = "redlock-redis:local"

// Environment variables read by Start.
const (
	// EnvBackend selects the backend: "containers", "processes", or empty
	// (or "auto") for containers when a Docker engine answers and processes
	// otherwise.
	EnvBackend = "REDLOCK_IT_BACKEND"
	// EnvImage names the Redis image of the containers backend.
	EnvImage = "REDLOCK_REDIS_IMAGE"
)

// Backend is where the nodes run.
type Backend string

// Backends.
const (
	// Containers runs one container per node through testcontainers-go.
	Containers Backend = "containers"
	// Processes runs one local redis-server process per node, for machines
	// without a Docker engine.
	Processes Backend = "processes"
)

// Persistence is how a node keeps its data across Kill and Start.
type Persistence int

// Persistence modes. RDB snapshots are always off (--save "").
const (
	// NoPersistence: a restarted node is empty.
	NoPersistence Persistence = iota
	// AOFEverySec: the append-only file is fsynced once a second, so a
	// restart after a hard kill may lose the last second of writes.
	AOFEverySec
	// AOFAlways: every write is fsynced before Redis replies, so a
	// restarted node has every write it acknowledged.
	AOFAlways
)

// String returns the mode's name: none, aof-everysec or aof-always.
func (p Persistence) String() string {
	switch p {
	case NoPersistence:
		return "none"
	case AOFEverySec:
		return "aof-everysec"
	case AOFAlways:
		return "aof-always"
	}
	return fmt.Sprintf("Persistence(%d)", int(p))
}

// redisArgs are the persistence flags of redis-server.
func (p Persistence) redisArgs() []string {
	switch p {
	case AOFEverySec:
		return []string{"--appendonly", "yes", "--appendfsync", "everysec"}
	case AOFAlways:
		return []string{"--appendonly", "yes", "--appendfsync", "always"}
	}
	return []string{"--appendonly", "no"}
}

// Option configures Start.
type Option func(*config)

type config struct {
	nodes       int
	persistence Persistence
	perNode     map[int]Persistence
	backend     Backend // "": from the environment
	image       string  // "": from the environment
	fakeClocks  bool
	replicas    []int // StartRedisClusters: the shards that get a replica
	err         error
}

func (c *config) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("cluster: "+format, args...)
	}
}

// WithNodes sets the number of nodes; the default is DefaultNodes.
func WithNodes(n int) Option {
	return func(c *config) {
		if n < 1 {
			c.fail("need at least one node, got %d", n)
			return
		}
		c.nodes = n
	}
}

// WithPersistence sets the persistence of every node not named by
// WithNodePersistence. The default is NoPersistence.
func WithPersistence(p Persistence) Option {
	return func(c *config) {
		if !p.valid() {
			c.fail("invalid persistence %v", p)
			return
		}
		c.persistence = p
	}
}

// WithNodePersistence sets the persistence of node i.
func WithNodePersistence(i int, p Persistence) Option {
	return func(c *config) {
		if !p.valid() {
			c.fail("invalid persistence %v", p)
			return
		}
		if c.perNode == nil {
			c.perNode = make(map[int]Persistence)
		}
		c.perNode[i] = p
	}
}

// WithBackend forces a backend, overriding REDLOCK_IT_BACKEND.
func WithBackend(b Backend) Option {
	return func(c *config) {
		if b != Containers && b != Processes {
			c.fail("unknown backend %q", b)
			return
		}
		c.backend = b
	}
}

// WithImage sets the image of the containers backend, overriding
// REDLOCK_REDIS_IMAGE.
func WithImage(image string) Option {
	return func(c *config) {
		if image == "" {
			c.fail("empty image name")
			return
		}
		c.image = image
	}
}

// WithFakeClocks runs every node under libfaketime, so that Node.SetClock
// can move its wall clock (the clock Redis expires keys and reports TIME by).
// Processes need libfaketime and gcc on the host
// (redistest.StartWithFakeClock); containers need the local image
// (DefaultImage, `make redis-image`), which carries libfaketime and the shim
// that lets it run redis-server.
func WithFakeClocks() Option {
	return func(c *config) { c.fakeClocks = true }
}

// WithReplicas gives shards (by index) of every cluster of
// StartRedisClusters one replica each, for RedisClusters.CutReplica and
// TakeOver; the other shards have none. Start ignores it.
func WithReplicas(shards ...int) Option {
	return func(c *config) { c.replicas = append(c.replicas, shards...) }
}

func (p Persistence) valid() bool { return p >= NoPersistence && p <= AOFAlways }

func newConfig(opts []Option) (config, error) {
	cfg := config{nodes: DefaultNodes}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	for i := range cfg.perNode {
		if i < 0 || i >= cfg.nodes {
			cfg.fail("persistence given for node %d of %d", i, cfg.nodes)
		}
	}
	if cfg.image == "" {
		cfg.image = os.Getenv(EnvImage)
	}
	if cfg.image == "" {
		cfg.image = DefaultImage
	}
	if cfg.fakeClocks && cfg.image != DefaultImage && cfg.backend != Processes {
		cfg.fail("fake clocks need the local image %s, not %s", DefaultImage, cfg.image)
	}
	return cfg, cfg.err
}

// persistenceOf returns node i's persistence.
func (c *config) persistenceOf(i int) Persistence {
	if p, ok := c.perNode[i]; ok {
		return p
	}
	return c.persistence
}
