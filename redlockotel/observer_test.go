package redlockotel_test

import (
	"context"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlockotel"
)

func bg() context.Context { return context.Background() }

// harness is an Observer wired to in-memory exporters, and a recorder of the
// raw events to compare the spans with.
type harness struct {
	reader *sdkmetric.ManualReader
	spans  *tracetest.SpanRecorder
	obs    *redlockotel.Observer

	mu     sync.Mutex
	events []redlock.Event
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{reader: sdkmetric.NewManualReader(), spans: tracetest.NewSpanRecorder()}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(h.reader))
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(h.spans))
	t.Cleanup(func() {
		_ = mp.Shutdown(bg())
		_ = tp.Shutdown(bg())
	})
	obs, err := redlockotel.New(redlockotel.WithMeterProvider(mp), redlockotel.WithTracerProvider(tp))
	require.NoError(t, err)
	h.obs = obs
	return h
}

// Observe records the raw event, then hands it to the Observer under test.
func (h *harness) Observe(ctx context.Context, e redlock.Event) {
	h.mu.Lock()
	h.events = append(h.events, e)
	h.mu.Unlock()
	h.obs.Observe(ctx, e)
}

// metrics collects the metrics by name.
func (h *harness) metrics(t *testing.T) map[string]metricdata.Aggregation {
	t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(t, h.reader.Collect(bg(), &rm))
	out := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(t, redlockotel.ScopeName, sm.Scope.Name)
		for _, m := range sm.Metrics {
			out[m.Name] = m.Data
		}
	}
	return out
}

// count returns the value of the counter name at the attributes kv (exactly).
func (h *harness) count(t *testing.T, name string, kv ...attribute.KeyValue) int64 {
	t.Helper()
	sum, ok := h.metrics(t)[name].(metricdata.Sum[int64])
	if !ok {
		return 0
	}
	want := attribute.NewSet(kv...)
	for _, dp := range sum.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Value
		}
	}
	return 0
}

// histogram returns the count and sum of the histogram name at kv.
func (h *harness) histogram(t *testing.T, name string, kv ...attribute.KeyValue) (uint64, float64) {
	t.Helper()
	hist, ok := h.metrics(t)[name].(metricdata.Histogram[float64])
	if !ok {
		return 0, 0
	}
	want := attribute.NewSet(kv...)
	for _, dp := range hist.DataPoints {
		if dp.Attributes.Equals(&want) {
			return dp.Count, dp.Sum
		}
	}
	return 0, 0
}

func event(kind string) attribute.KeyValue  { return attribute.String("redlock.event", kind) }
func reason(why string) attribute.KeyValue  { return attribute.String("redlock.reason", why) }
func op(name string) attribute.KeyValue     { return attribute.String("redlock.operation", name) }
func node(addr string) []attribute.KeyValue { return addrAttrs(addr) }

func addrAttrs(addr string) []attribute.KeyValue {
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	return []attribute.KeyValue{attribute.String("server.address", host), attribute.Int("server.port", p)}
}

// nodes starts n redis-servers and returns them with one pool each.
func nodes(t *testing.T, n int) ([]*redistest.Server, []pool.Pool) {
	t.Helper()
	servers := redistest.StartN(t, n, redistest.NoPersistence)
	pools := make([]pool.Pool, n)
	for i, s := range servers {
		p, err := pool.FromURL(s.URL())
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Close() })
		pools[i] = p
	}
	return servers, pools
}

func newClient(t *testing.T, pools []pool.Pool, opts ...redlock.Option) *redlock.Client {
	t.Helper()
	opts = append([]redlock.Option{redlock.WithNodeTimeout(time.Second)}, opts...)
	c, err := redlock.New(pools, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestLifeOfALock(t *testing.T) {
	h := newHarness(t)
	_, pools := nodes(t, 3)
	a := newClient(t, pools, redlock.WithObserver(h))
	b := newClient(t, pools, redlock.WithObserver(h))

	l, err := a.TryLock(bg(), "res", time.Minute, redlock.WithFencing())
	require.NoError(t, err)
	_, err = b.TryLock(bg(), "res", time.Minute)
	require.ErrorIs(t, err, redlock.ErrTaken)
	require.NoError(t, l.Extend(bg(), time.Minute))
	require.NoError(t, l.Unlock(bg()))

	assert.Equal(t, int64(1), h.count(t, "redlock.lock.acquisitions", event("acquired")))
	assert.Equal(t, int64(1), h.count(t, "redlock.lock.acquisitions", event("not_obtained")))
	assert.Equal(t, int64(1), h.count(t, "redlock.lock.failures", event("not_obtained"), reason("taken")))
	n, sum := h.histogram(t, "redlock.lock.wait.duration", event("acquired"))
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, h.events[0].Duration.Seconds(), sum)
	n, sum = h.histogram(t, "redlock.lock.hold.duration", event("released"))
	assert.Equal(t, uint64(1), n)
	assert.Equal(t, h.events[3].Held.Seconds(), sum)
	// The attempt is decided once 2 of 3 nodes refused; a third answer
	// arriving later is not part of the error.
	var refused int64
	for _, p := range pools {
		n := h.count(t, "redlock.node.errors", append(node(p.Addr()), op("lock"), reason("taken"))...)
		assert.LessOrEqual(t, n, int64(1))
		refused += n
	}
	assert.GreaterOrEqual(t, refused, int64(2), "the refusing nodes are counted")

	spans := h.spans.Ended()
	require.Len(t, spans, 4)
	names := []string{"redlock.lock", "redlock.lock", "redlock.extend", "redlock.unlock"}
	for i, s := range spans {
		e := h.events[i]
		assert.Equal(t, names[i], s.Name())
		assert.True(t, s.StartTime().Equal(e.Start), "span %d starts at the event's Start", i)
		assert.True(t, s.EndTime().Equal(e.Start.Add(e.Duration)), "span %d ends at Start+Duration", i)
		assert.Contains(t, s.Attributes(), attribute.String("redlock.key", "res"))
	}
	assert.Equal(t, codes.Unset, spans[0].Status().Code)
	assert.Contains(t, spans[0].Attributes(), attribute.Int64("redlock.fence", int64(l.Fence())))
	assert.Equal(t, codes.Error, spans[1].Status().Code)
	assert.Contains(t, spans[1].Attributes(), attribute.String("error.type", "taken"))
	assert.Len(t, spans[1].Events(), int(refused), "one event per refusing node")
}

func TestNodesDown(t *testing.T) {
	h := newHarness(t)
	servers, pools := nodes(t, 3)
	c := newClient(t, pools, redlock.WithObserver(h))

	l, err := c.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)
	servers[0].Kill()
	servers[1].Kill()
	require.Error(t, l.Extend(bg(), time.Minute))
	require.Error(t, l.Unlock(bg()))
	_, err = c.TryLock(bg(), "other", time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotObtained)

	for _, kind := range []string{"extend_failed", "release_failed", "not_obtained"} {
		assert.Equal(t, int64(1), h.count(t, "redlock.lock.failures", event(kind), reason("network")), kind)
	}
	for _, p := range pools[:2] {
		for _, o := range []string{"extend", "unlock", "lock"} {
			assert.Equal(t, int64(1), h.count(t, "redlock.node.errors", append(node(p.Addr()), op(o), reason("network"))...),
				"%s on %s", o, p.Addr())
		}
	}
	n, _ := h.histogram(t, "redlock.lock.hold.duration", event("release_failed"))
	assert.Equal(t, uint64(1), n, "a failed release ends the hold too")
}

func TestTimeout(t *testing.T) {
	h := newHarness(t)
	servers, pools := nodes(t, 3)
	c, err := redlock.New(pools, redlock.WithNodeTimeout(100*time.Millisecond), redlock.WithObserver(h))
	require.NoError(t, err)
	defer c.Close() // before the nodes resume (deferred below, run first)
	servers[0].Pause()
	servers[1].Pause()
	defer servers[1].Resume()
	defer servers[0].Resume()

	_, err = c.TryLock(bg(), "res", time.Minute)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	assert.Equal(t, int64(1), h.count(t, "redlock.lock.failures", event("not_obtained"), reason("timeout")))
	assert.Equal(t, int64(1), h.count(t, "redlock.node.errors", append(node(pools[0].Addr()), op("lock"), reason("timeout"))...))
}

func TestCanceled(t *testing.T) {
	h := newHarness(t)
	_, pools := nodes(t, 3)
	c := newClient(t, pools, redlock.WithObserver(h))
	ctx, cancel := context.WithCancel(bg())
	cancel()
	_, err := c.TryLock(ctx, "res", time.Minute)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, int64(1), h.count(t, "redlock.lock.failures", event("not_obtained"), reason("canceled")))
}

func TestLostWhenClosed(t *testing.T) {
	h := newHarness(t)
	_, pools := nodes(t, 3)
	c := newClient(t, pools, redlock.WithObserver(h))
	l, err := c.TryLock(bg(), "res", time.Minute, redlock.WithAutoExtend(0))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	<-l.Done()

	assert.Equal(t, int64(1), h.count(t, "redlock.lock.lost", reason("closed")))
	assert.Equal(t, int64(1), h.count(t, "redlock.lock.failures", event("lost"), reason("closed")))
	n, _ := h.histogram(t, "redlock.lock.hold.duration", event("lost"))
	assert.Equal(t, uint64(1), n)
	spans := h.spans.Ended()
	require.NotEmpty(t, spans)
	last := spans[len(spans)-1]
	assert.Equal(t, "redlock.lost", last.Name())
	assert.Equal(t, codes.Error, last.Status().Code)
}

// slowPool moves a fake clock past the lock's TTL during each call: the
// majority agrees, but too late. (A plain lock is taken by SET NX PX, or by
// a script that also raises the node's lease ceiling.)
type slowPool struct {
	pool.Pool
	clk *clock.Fake
}

func (p slowPool) SetNX(ctx context.Context, key, value string, ttl time.Duration) (bool, error) {
	p.clk.Advance(ttl)
	return p.Pool.SetNX(ctx, key, value, ttl)
}

func (p slowPool) Eval(ctx context.Context, s *pool.Script, keys []string, args ...any) (any, error) {
	p.clk.Advance(time.Second)
	return p.Pool.Eval(ctx, s, keys, args...)
}

func TestValidityUsedUp(t *testing.T) {
	h := newHarness(t)
	_, pools := nodes(t, 3)
	clk := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	slow := make([]pool.Pool, len(pools))
	for i, p := range pools {
		slow[i] = slowPool{Pool: p, clk: clk}
	}
	c := newClient(t, slow, redlock.WithObserver(h), redlock.WithTimeSource(clk))
	_, err := c.TryLock(bg(), "res", time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained)
	assert.Equal(t, int64(1), h.count(t, "redlock.lock.failures", event("not_obtained"), reason("validity")))
}

func TestNewRejectsNilProviders(t *testing.T) {
	_, err := redlockotel.New(redlockotel.WithMeterProvider(nil))
	require.ErrorContains(t, err, "nil meter provider")
	_, err = redlockotel.New(redlockotel.WithTracerProvider(nil))
	require.ErrorContains(t, err, "nil tracer provider")
	o, err := redlockotel.New() // the global providers: no-ops until set
	require.NoError(t, err)
	o.Observe(bg(), redlock.Event{Kind: redlock.Acquired, Key: "k", Start: time.Now()})

	var nilObs *redlockotel.Observer
	nilObs.Observe(bg(), redlock.Event{Kind: redlock.Acquired}) // records nothing, does not panic
}

func TestNotHeld(t *testing.T) {
	h := newHarness(t)
	servers, pools := nodes(t, 3)
	c := newClient(t, pools, redlock.WithObserver(h))
	l, err := c.TryLock(bg(), "res", time.Minute)
	require.NoError(t, err)
	for _, s := range servers {
		require.NoError(t, s.Client(t).FlushAll(bg()).Err()) // the nodes forget the lock
	}
	require.ErrorIs(t, l.Extend(bg(), time.Minute), redlock.ErrNotHeld)
	assert.Equal(t, int64(1), h.count(t, "redlock.lock.failures", event("extend_failed"), reason("not_held")))
}
