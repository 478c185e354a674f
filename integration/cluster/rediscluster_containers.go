package cluster

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
	"golang.org/x/sync/errgroup"

	"github.com/redlockgo/redlock/internal/redistest"
)

// Redis Clusters in containers. A cluster client connects to the addresses
// the shards announce, so each shard's container uses the host's network
// and listens on 127.0.0.1 on ports the harness picks: the addresses are
// the same as the processes backend's, and a killed shard started again
// keeps its address, its nodes.conf (in the container's /data) and so its
// identity and slots.

// startClusterShards starts n clusters of masters shards each, every shard
// a container of b's image, and forms them. It returns the shards by
// cluster, and each shard's address.
func (b *containerBackend) startClusterShards(ctx context.Context, n, masters int) ([][]server, error) {
	out := make([][]server, n)
	ms := make([][]redistest.Master, n)
	g, gctx := errgroup.WithContext(ctx)
	for i := range out {
		out[i] = make([]server, masters)
		ms[i] = make([]redistest.Master, masters)
		for j := range masters {
			g.Go(func() error {
				// A port picked free may be taken before Redis binds it
				// (other tests run on the machine): new ports, a new try.
				var err error
				for range 3 {
					var ports [2]int
					if ports, err = freePorts(); err != nil {
						continue
					}
					var s *shardServer
					if s, err = b.startShard(gctx, i, j, ports[0], ports[1]); err == nil {
						out[i][j] = s
						ms[i][j] = redistest.Master{Addr: s.at, Port: ports[0], BusPort: ports[1]}
						return nil
					}
				}
				return fmt.Errorf("cluster %d shard %d: %w", i, j, err)
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	g, gctx = errgroup.WithContext(ctx)
	for i := range out {
		g.Go(func() error { return redistest.FormCluster(gctx, ms[i]) })
	}
	return out, g.Wait()
}

// startReplicas starts one replica for each of the shards withReplica of
// every cluster of masters (by cluster, then shard), and returns them in
// the same layout, nil where a shard has none, once each is in sync.
func (b *containerBackend) startReplicas(ctx context.Context, masters [][]server, withReplica []int) ([][]server, error) {
	out := make([][]server, len(masters))
	g, gctx := errgroup.WithContext(ctx)
	for i := range masters {
		out[i] = make([]server, len(masters[i]))
		for _, j := range withReplica {
			if j < 0 || j >= len(masters[i]) {
				return nil, fmt.Errorf("no shard %d", j)
			}
			g.Go(func() error {
				var err error
				for range 3 { // as startClusterShards: a port may be taken meanwhile
					var ports [2]int
					if ports, err = freePorts(); err != nil {
						continue
					}
					var s *shardServer
					if s, err = b.startShard(gctx, i, j, ports[0], ports[1]); err != nil {
						continue
					}
					m := masters[i][j].addr()
					out[i][j] = s
					return redistest.Replicate(gctx, m, m, redistest.Master{Addr: s.at, Port: ports[0], BusPort: ports[1]})
				}
				return fmt.Errorf("replica of cluster %d shard %d: %w", i, j, err)
			})
		}
	}
	return out, g.Wait()
}

// freePorts returns two distinct ports free now, a shard's and its cluster
// bus's, from redistest.FreePort, which never hands out a port twice in a
// process. (Ports of its own, picked with a listen on port 0 and closed,
// could come back to a shard of another cluster started at the same time:
// both shards then answered at one address, and FormCluster's MEETs joined
// nodes of two clusters, "cluster_known_nodes:5" in a cluster of three.)
func freePorts() ([2]int, error) {
	var out [2]int
	for i := range out {
		p, err := redistest.FreePort()
		if err != nil {
			return out, err
		}
		out[i] = p
	}
	return out, nil
}

// startShard creates and starts one cluster-enabled Redis on the host's
// network at 127.0.0.1:port, bus port bus.
func (b *containerBackend) startShard(ctx context.Context, cluster, shard, port, bus int) (*shardServer, error) {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	req := testcontainers.ContainerRequest{
		Image: b.image,
		Cmd: append([]string{
			"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", "/data",
			"--protected-mode", "no", "--save", "", "--appendonly", "no",
			"--maxmemory-policy", "noeviction",
			"--cluster-enabled", "yes", "--cluster-port", strconv.Itoa(bus),
			"--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "1000",
			"--cluster-require-full-coverage", "no",
		}, noFailover...),
		Labels: map[string]string{Label: "true", Label + ".cluster": strconv.Itoa(cluster),
			Label + ".shard": strconv.Itoa(shard)},
		HostConfigModifier: func(hc *container.HostConfig) { hc.NetworkMode = "host" },
		WaitingFor:         shardReady{addr, bus},
	}
	ctr, err := b.create(ctx, req)
	if err != nil {
		return nil, err
	}
	s := &shardServer{containerServer{b: b, ctr: ctr}, addr, shardReady{addr, bus}}
	return s, s.start(ctx)
}

// shardServer is a cluster shard's container: containerServer's kill and
// pause, at a fixed address.
type shardServer struct {
	containerServer
	at    string
	ready shardReady
}

func (s *shardServer) addr() string { return s.at }

// start starts the container and waits until the shard's own Redis answers.
func (s *shardServer) start(ctx context.Context) error {
	if err := s.ctr.Start(ctx); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	return s.ready.WaitUntilReady(ctx, s.ctr)
}

// answers asks the server at a's address for its cluster bus port: nil
// when it is the shard's, an error that says so when it is another's, or
// the call's error.
func (a shardReady) answers(ctx context.Context) error {
	c := redis.NewClient(&redis.Options{Addr: a.addr, MaxRetries: -1, DialTimeout: time.Second,
		ReadTimeout: time.Second, DisableIdentity: true})
	defer c.Close()
	bus, err := c.ConfigGet(ctx, "cluster-port").Result()
	switch {
	case err != nil:
		return err
	case bus["cluster-port"] != strconv.Itoa(a.bus):
		return fmt.Errorf("the server at %s has cluster bus port %q, not this shard's %d", a.addr, bus["cluster-port"], a.bus)
	}
	return nil
}

// shardReady waits until the shard's own Redis answers at its fixed
// address: a server there whose cluster bus port is not the shard's is
// another process's (its port was taken before this shard's Redis bound
// it), and never counts as this shard ready, though it answers PING.
type shardReady struct {
	addr string
	bus  int
}

func (a shardReady) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		err := a.answers(ctx)
		if err == nil {
			return nil
		}
		if st, serr := target.State(ctx); serr == nil && !st.Running {
			return fmt.Errorf("redis exited (code %d) before answering: %v", st.ExitCode, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("redis at %s not answering: %w (last error: %v)", a.addr, ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
