// Package redlockotel exports the events of a redlock.Client as
// OpenTelemetry metrics and spans. It is a module of its own, so that the
// lock itself does not depend on OpenTelemetry.
//
//	obs, err := redlockotel.New() // the global meter and tracer providers
//	if err != nil {
//		return err
//	}
//	c, err := redlock.New(pools, redlock.WithObserver(obs))
//
// Metrics (durations in seconds): redlock.lock.acquisitions, .failures,
// .wait.duration, .hold.duration and .lost, with redlock.event and
// redlock.reason attributes; redlock.node.errors per node address; and the
// state-set gauge redlock.node.state, registered per Client with
// ObserveNodes. Lock keys are not metric attributes; they are on the spans:
// one per operation (redlock.lock, redlock.extend, redlock.unlock,
// redlock.lost), with status Error and an event per failed node when the
// operation failed. See docs/ecosystem.md, "OpenTelemetry metrics and
// spans".
package redlockotel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/redlockgo/redlock/redlock"
)

// ScopeName is the instrumentation scope of the Observer's meter and tracer.
const ScopeName = "github.com/redlockgo/redlock/redlockotel"

// Attribute keys.
const (
	keyEvent     = attribute.Key("redlock.event")
	keyReason    = attribute.Key("redlock.reason")
	keyOperation = attribute.Key("redlock.operation")
	keyKey       = attribute.Key("redlock.key")
	keyAttempts  = attribute.Key("redlock.attempts")
	keyFence     = attribute.Key("redlock.fence")
	keyHeld      = attribute.Key("redlock.held")
	keyAddress   = attribute.Key("server.address")
	keyPort      = attribute.Key("server.port")
	keyErrorType = attribute.Key("error.type")
	keyNode      = attribute.Key("redlock.node")
	keyState     = attribute.Key("redlock.node.state")
)

// Observer is a redlock.Observer that records metrics and spans. It is safe
// for concurrent use; a nil *Observer records nothing.
type Observer struct {
	tracer       trace.Tracer
	acquisitions metric.Int64Counter
	failures     metric.Int64Counter
	wait         metric.Float64Histogram
	hold         metric.Float64Histogram
	lost         metric.Int64Counter
	nodeErrors   metric.Int64Counter
	meter        metric.Meter
	nodeState    metric.Int64ObservableGauge
}

var _ redlock.Observer = (*Observer)(nil)

// New returns an Observer that creates its instruments on the meter provider
// and its spans on the tracer provider given by the options. It fails on a
// nil provider or when an instrument cannot be created.
func New(opts ...Option) (*Observer, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	m := cfg.meters.Meter(ScopeName)
	o := &Observer{tracer: cfg.tracers.Tracer(ScopeName), meter: m}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	histogram := func(name, desc string, bounds ...float64) metric.Float64Histogram {
		h, err := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc),
			metric.WithExplicitBucketBoundaries(bounds...))
		errs = append(errs, err)
		return h
	}
	o.acquisitions = counter("redlock.lock.acquisitions", "{acquisition}",
		"Lock acquisitions (Lock, TryLock, Do), by outcome.")
	o.failures = counter("redlock.lock.failures", "{failure}",
		"Failed lock operations and lost locks, by event and reason.")
	o.wait = histogram("redlock.lock.wait.duration",
		"Time from the start of an acquisition to its outcome, retries included.",
		0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60)
	o.hold = histogram("redlock.lock.hold.duration",
		"Time a lock was held, from acquisition to release or loss.",
		0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3600)
	o.lost = counter("redlock.lock.lost", "{lock}",
		"Auto-extended locks that could no longer be guaranteed, by reason.")
	o.nodeErrors = counter("redlock.node.errors", "{error}",
		"Nodes that did not agree to an operation that failed, by node and reason.")
	o.nodeState, err = m.Int64ObservableGauge("redlock.node.state", metric.WithUnit("1"),
		metric.WithDescription("Each node's state as its Client last judged it (redlock.Client.NodeStates): 1 for the current state, 0 for the others."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("redlockotel: %w", err)
	}
	return o, nil
}

// Observe records e: it updates the metrics and ends a span for it. It
// implements redlock.Observer. Events about a node rather than a lock
// (NodeQuarantined, NodeUnverified, NodeClockFault, NodeSameServer: once
// per node run, not per operation) are not recorded; redlock.WithLogger
// logs them.
func (o *Observer) Observe(ctx context.Context, e redlock.Event) {
	if o == nil {
		return
	}
	switch e.Kind {
	case redlock.NodeQuarantined, redlock.NodeUnverified, redlock.NodeClockFault, redlock.NodeSameServer:
		return
	}
	why := ""
	if e.Err != nil {
		why = reason(e.Err)
	}
	event := keyEvent.String(e.Kind.String())
	byEvent := metric.WithAttributeSet(attribute.NewSet(event))
	switch e.Kind {
	case redlock.Acquired, redlock.NotObtained:
		o.acquisitions.Add(ctx, 1, byEvent)
		o.wait.Record(ctx, e.Duration.Seconds(), byEvent)
	}
	switch e.Kind {
	case redlock.Released, redlock.ReleaseFailed, redlock.Lost:
		o.hold.Record(ctx, e.Held.Seconds(), byEvent)
	}
	if e.Err != nil {
		o.failures.Add(ctx, 1, metric.WithAttributes(event, keyReason.String(why)))
	}
	if e.Kind == redlock.Lost {
		o.lost.Add(ctx, 1, metric.WithAttributes(keyReason.String(why)))
	}
	nodes := failedNodes(e)
	for _, n := range nodes {
		o.nodeErrors.Add(ctx, 1, metric.WithAttributes(n.attrs...))
	}
	o.span(ctx, e, why, nodes)
}

// span records the operation of e as a span that has already ended.
func (o *Observer) span(ctx context.Context, e redlock.Event, why string, nodes []failedNode) {
	attrs := []attribute.KeyValue{keyKey.String(e.Key), keyEvent.String(e.Kind.String())}
	if e.Attempts > 0 {
		attrs = append(attrs, keyAttempts.Int(e.Attempts))
	}
	if e.Fence > 0 {
		attrs = append(attrs, fence(e.Fence))
	}
	if e.Held > 0 {
		attrs = append(attrs, keyHeld.Float64(e.Held.Seconds()))
	}
	_, span := o.tracer.Start(ctx, spanName(e.Kind),
		trace.WithTimestamp(e.Start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	end := e.Start.Add(e.Duration)
	if e.Err != nil && span.IsRecording() {
		span.SetAttributes(keyErrorType.String(why))
		span.SetStatus(codes.Error, e.Err.Error())
		for _, n := range nodes {
			span.AddEvent("redlock.node_error", trace.WithTimestamp(end),
				trace.WithAttributes(append(slices.Clip(n.attrs), attribute.String("error.message", n.err.Error()))...))
		}
	}
	span.End(trace.WithTimestamp(end))
}

func spanName(k redlock.EventKind) string {
	switch k {
	case redlock.Acquired, redlock.NotObtained:
		return "redlock.lock"
	case redlock.Extended, redlock.ExtendFailed:
		return "redlock.extend"
	case redlock.Released, redlock.ReleaseFailed:
		return "redlock.unlock"
	case redlock.Lost:
		return "redlock.lost"
	}
	return "redlock." + k.String()
}

// fence keeps a fencing token exact: attributes have no unsigned integers.
func fence(f uint64) attribute.KeyValue {
	if f > math.MaxInt64 {
		return keyFence.String(strconv.FormatUint(f, 10))
	}
	return keyFence.Int64(int64(f))
}

type failedNode struct {
	attrs []attribute.KeyValue
	err   error
}

// failedNodes lists the nodes that did not agree to the operation of e, from
// its *redlock.QuorumError. A loss is left out: its error repeats the nodes
// of the extension that failed, already counted with that event. So are
// nodes whose answer was still pending at the decision (redlock.ErrPending):
// they did not fail, the majority decided without them.
func failedNodes(e redlock.Event) []failedNode {
	var qe *redlock.QuorumError
	if e.Kind == redlock.Lost || !errors.As(e.Err, &qe) {
		return nil
	}
	out := make([]failedNode, 0, len(qe.Nodes))
	for _, n := range qe.Nodes {
		if errors.Is(n.Err, redlock.ErrPending) {
			continue
		}
		attrs := append(address(n.Addr),
			keyOperation.String(qe.Op), keyReason.String(nodeReason(n.Err)))
		out = append(out, failedNode{attrs: attrs, err: n})
	}
	return out
}

// address splits a node's host:port into the semantic-convention attributes;
// an address of another form is kept whole.
func address(addr string) []attribute.KeyValue {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []attribute.KeyValue{keyAddress.String(addr)}
	}
	if p, err := strconv.Atoi(port); err == nil {
		return []attribute.KeyValue{keyAddress.String(host), keyPort.Int(p)}
	}
	return []attribute.KeyValue{keyAddress.String(addr)}
}
