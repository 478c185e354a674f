package redlockotel

import (
	"context"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/redlockgo/redlock/redlock"
)

// nodeStates are the states redlock.node.state reports, each a series.
var nodeStates = []redlock.NodeState{redlock.StateOK, redlock.StateSilent, redlock.StateFailing,
	redlock.StateQuarantined, redlock.StateClockSuspect}

// ObserveNodes reports the state of c's nodes (c.NodeStates) as the gauge
// redlock.node.state at every collection, until the returned Registration
// is unregistered: call it once per Client, after redlock.New, and
// Unregister when the Client is closed. A collection asks no node: it
// reads what the Client's calls last found. Two Clients over the same
// nodes report the same series; register one of them. On a nil Observer
// it registers nothing; it fails on a nil Client.
//
//	obs, _ := redlockotel.New()
//	c, _ := redlock.New(pools, redlock.WithObserver(obs))
//	reg, err := obs.ObserveNodes(c)
//	defer reg.Unregister()
func (o *Observer) ObserveNodes(c *redlock.Client) (metric.Registration, error) {
	if c == nil {
		return nil, errors.New("redlockotel: nil client")
	}
	if o == nil {
		return noop.Meter{}.RegisterCallback(func(context.Context, metric.Observer) error { return nil })
	}
	// The attribute sets of every node and state, built once: a collection
	// allocates only the Client's snapshot.
	sets := make([][]metric.ObserveOption, 0, len(c.NodeStates()))
	for _, n := range c.NodeStates() {
		base := append(address(n.Addr), keyNode.Int(n.Node))
		byState := make([]metric.ObserveOption, len(nodeStates))
		for j, s := range nodeStates {
			byState[j] = metric.WithAttributeSet(attribute.NewSet(append(base[:len(base):len(base)], keyState.String(s.String()))...))
		}
		sets = append(sets, byState)
	}
	reg, err := o.meter.RegisterCallback(func(_ context.Context, obs metric.Observer) error {
		for _, n := range c.NodeStates() {
			for j, s := range nodeStates {
				v := int64(0)
				if n.State == s {
					v = 1
				}
				obs.ObserveInt64(o.nodeState, v, sets[n.Node][j])
			}
		}
		return nil
	}, o.nodeState)
	if err != nil {
		return nil, fmt.Errorf("redlockotel: %w", err)
	}
	return reg, nil
}
