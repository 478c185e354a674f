package bench

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// The scale row (issue 18): Goroutines goroutines on distinct keys, this
// library over three single Redis nodes and over three Redis Clusters of
// three masters, interleaved in one run. The nodes are local redis-server
// processes without proxies, started for this scenario only.
const (
	scaleSingle  = "3 single nodes"
	scaleCluster = "3 clusters of 3 masters"
	// scaleClusters and scaleMasters shape the cluster setup.
	scaleClusters = 3
	scaleMasters  = 3
)

// ScaleResult is the scale row: the rates of both setups and, for each
// Redis process, the CPU time it used while its setup ran.
type ScaleResult struct {
	Rates map[string]*rate
	// Shares holds, by setup, each process's share of one core during that
	// setup's slices: (used_cpu_user + used_cpu_sys from INFO cpu, after
	// minus before) / the setup's measured time. For the clusters, in
	// order: cluster 1's masters, cluster 2's, cluster 3's.
	Shares map[string][]float64
}

// runScale measures the scale row; it starts (and, with tb, stops) its own
// nodes.
func runScale(tb testing.TB, cfg Config) *ScaleResult {
	tb.Helper()
	singles := redistest.StartN(tb, 3, redistest.NoPersistence)
	clusters := redistest.StartClusters(tb, scaleClusters, scaleMasters, redistest.NoPersistence)
	var masters []*redistest.Server
	for _, c := range clusters {
		masters = append(masters, c.Masters...)
	}
	urls := make([]string, 0, len(singles))
	for _, s := range singles {
		urls = append(urls, s.URL())
	}
	var curls []string
	for _, c := range clusters {
		addrs := c.Addrs()
		curls = append(curls, "redis+cluster://"+addrs[0]+"?addr="+strings.Join(addrs[1:], "&addr="))
	}
	servers := map[string][]*redistest.Server{scaleSingle: singles, scaleCluster: masters}
	es := []entrant{
		one(scaleSingle, scaleLocker(tb, urls)),
		one(scaleCluster, scaleLocker(tb, curls)),
	}
	ctx := context.Background()
	// Warm-up: connections open, scripts cached, the clusters' slot maps
	// loaded, so that the measurement sees no redirect.
	throughput(ctx, "bench:scale", es, plan{rounds: 1, slice: cfg.ScaleSlice / 2}, cfg.Goroutines)
	before := map[string][]time.Duration{}
	for name, ss := range servers {
		before[name] = redisCPU(tb, ss)
	}
	rates := throughput(ctx, "bench:scale", es, plan{rounds: cfg.ScaleRounds, slice: cfg.ScaleSlice}, cfg.Goroutines)
	res := &ScaleResult{Rates: rates, Shares: map[string][]float64{}}
	for name, ss := range servers {
		after := redisCPU(tb, ss)
		for i := range ss {
			res.Shares[name] = append(res.Shares[name], (after[i]-before[name][i]).Seconds()/rates[name].elapsed.Seconds())
		}
	}
	return res
}

// scaleLocker returns this library over the nodes of urls, with its
// defaults; the Client and pools close when tb ends.
func scaleLocker(tb testing.TB, urls []string) locker {
	tb.Helper()
	ps, err := pool.FromURLs(urls)
	if err != nil {
		tb.Fatalf("bench: scale: %v", err)
	}
	c, err := redlock.New(ps)
	if err != nil {
		tb.Fatalf("bench: scale: %v", err)
	}
	tb.Cleanup(func() {
		_ = c.Close()
		for _, p := range ps {
			_ = p.Close()
		}
	})
	return oursLocker{c: c}
}

// redisCPU returns the CPU time (user and system) each server has used, from
// INFO cpu.
func redisCPU(tb testing.TB, servers []*redistest.Server) []time.Duration {
	tb.Helper()
	out := make([]time.Duration, len(servers))
	for i, s := range servers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		info, err := s.Client(tb).Info(ctx, "cpu").Result()
		cancel()
		if err != nil {
			tb.Fatalf("bench: INFO cpu of %s: %v", s.Addr(), err)
		}
		out[i] = cpuSeconds(info, "used_cpu_user") + cpuSeconds(info, "used_cpu_sys")
	}
	return out
}

// cpuSeconds reads field (seconds, with a fraction) from INFO cpu; 0 when
// absent.
func cpuSeconds(info, field string) time.Duration {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), field+":"); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return time.Duration(f * float64(time.Second))
			}
		}
	}
	return 0
}

// scaleTable writes the scale row: both setups' rates, the ratio, and each
// Redis process's CPU share.
func (r *Results) scaleTable(w io.Writer) {
	s := r.Scale
	if s == nil || s.Rates[scaleSingle] == nil || s.Rates[scaleCluster] == nil {
		return
	}
	cfg := r.Config
	fmt.Fprintf(w, "#### Scale: %d goroutines on distinct keys, %s against %s (%v each, interleaved; local processes, no proxies)\n\n",
		cfg.Goroutines, scaleCluster, scaleSingle, time.Duration(cfg.ScaleRounds)*cfg.ScaleSlice)
	fmt.Fprintf(w, "| setup | lock+unlock per second | errors | / %s | Redis processes | CPU share of each (%% of one core) | busiest | all together |\n"+
		"|---|--:|--:|--:|--:|---|--:|--:|\n", scaleSingle)
	base := s.Rates[scaleSingle].perSecond()
	var errs []string
	for _, name := range []string{scaleSingle, scaleCluster} {
		x, shares := s.Rates[name], s.Shares[name]
		cells := make([]string, len(shares))
		var top, sum float64
		for i, v := range shares {
			cells[i] = fmt.Sprintf("%.0f", 100*v)
			top, sum = max(top, v), sum+v
		}
		list := strings.Join(cells, " ")
		if name == scaleCluster && len(cells) == scaleClusters*scaleMasters {
			var groups []string
			for i := 0; i < len(cells); i += scaleMasters {
				groups = append(groups, strings.Join(cells[i:i+scaleMasters], " "))
			}
			list = strings.Join(groups, " / ") // one group per cluster
		}
		tableRow(w, name, fmtFloat(x.perSecond()), strconv.Itoa(x.errs), fmtRatio(ratio(x.perSecond(), base)),
			strconv.Itoa(len(shares)), list, fmt.Sprintf("%.0f%%", 100*top), fmt.Sprintf("%.0f%%", 100*sum))
		if x.firstErr != nil {
			errs = append(errs, fmt.Sprintf("%s's first error: %v", name, oneLine(x.firstErr)))
		}
	}
	endTable(w, errs)
}
