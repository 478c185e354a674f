package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// Direction selects the traffic a fault applies to.
type Direction int

// Directions.
const (
	// Upstream is the traffic from the client to the node: the commands.
	Upstream Direction = 1 << iota
	// Downstream is the traffic from the node to the client: the replies.
	Downstream
	// Both is the traffic both ways.
	Both = Upstream | Downstream
)

// String returns upstream, downstream or both.
func (d Direction) String() string {
	switch d {
	case Upstream:
		return "upstream"
	case Downstream:
		return "downstream"
	case Both:
		return "both"
	}
	return fmt.Sprintf("Direction(%d)", int(d))
}

// streams lists toxiproxy's stream names for d.
func (d Direction) streams() []string {
	var out []string
	if d&Upstream != 0 {
		out = append(out, "upstream")
	}
	if d&Downstream != 0 {
		out = append(out, "downstream")
	}
	return out
}

// newProxyServer returns a toxiproxy server used as a library: no HTTP API,
// no logs, no metrics.
func newProxyServer() *toxiproxy.ApiServer {
	return toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())
}

// proxy is the fixed, client-facing address of one node: an in-process
// toxiproxy proxy whose upstream follows the node across restarts and which
// carries the node's network faults.
type proxy struct {
	addr string // where clients connect; never changes

	mu          sync.Mutex
	p           *toxiproxy.Proxy
	upstream    string
	partitioned bool
	toxics      map[string]bool // names of the installed toxics
}

func newProxy(srv *toxiproxy.ApiServer, name, upstream string) (*proxy, error) {
	p := toxiproxy.NewProxy(srv, name, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	// Start has returned, so the listener's resolved address is set.
	return &proxy{addr: p.Listen, p: p, upstream: upstream, toxics: make(map[string]bool)}, nil
}

// setUpstream points the proxy at the node's new address. Open connections
// are closed: they led to a process that no longer exists.
func (x *proxy) setUpstream(upstream string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if upstream == x.upstream {
		return nil
	}
	x.upstream = upstream
	return x.p.Update(&toxiproxy.Proxy{Listen: x.addr, Upstream: upstream, Enabled: !x.partitioned})
}

// partition stops the proxy: open connections are closed and new ones are
// refused, as when the client's host loses its route to the node.
func (x *proxy) partition() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.p.Stop()
	x.partitioned = true
}

// heal undoes partition and removes every toxic.
func (x *proxy) heal() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.p.Toxics.ResetToxics(context.Background())
	clear(x.toxics)
	if !x.partitioned {
		return nil
	}
	if err := x.p.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return fmt.Errorf("restart proxy on %s: %w", x.addr, err)
	}
	x.partitioned = false
	return nil
}

// toxic installs a toxic of kind on each stream of dir, replacing one of the
// same kind there. It applies to open connections and new ones.
func (x *proxy) toxic(kind string, dir Direction, attrs map[string]any) error {
	streams := dir.streams()
	if len(streams) == 0 {
		return fmt.Errorf("cluster: invalid direction %v", dir)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, stream := range streams {
		name := kind + "_" + stream
		if err := x.p.Toxics.RemoveToxic(context.Background(), name); err != nil && !errors.Is(err, toxiproxy.ErrToxicNotFound) {
			return err
		}
		body, err := json.Marshal(map[string]any{
			"name": name, "type": kind, "stream": stream, "toxicity": 1.0, "attributes": attrs,
		})
		if err != nil {
			return err
		}
		if _, err := x.p.Toxics.AddToxicJson(bytes.NewReader(body)); err != nil {
			return fmt.Errorf("add %s toxic: %w", name, err)
		}
		x.toxics[name] = true
	}
	return nil
}

// faults names the proxy's active faults, for logs.
func (x *proxy) faults() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := slices.Sorted(maps.Keys(x.toxics))
	if x.partitioned {
		out = append([]string{"partitioned"}, out...)
	}
	return out
}

func (x *proxy) close() {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.p.Stop()
	x.partitioned = true
}
