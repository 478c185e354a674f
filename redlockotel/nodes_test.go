package redlockotel_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlockotel"
)

// nodeStates returns the redlock.node.state gauge: for each node index,
// the value of each state's series.
func (h *harness) nodeStates(t *testing.T) map[int64]map[string]int64 {
	t.Helper()
	out := map[int64]map[string]int64{}
	g, ok := h.metrics(t)["redlock.node.state"].(metricdata.Gauge[int64])
	if !ok {
		return out
	}
	for _, dp := range g.DataPoints {
		n, _ := dp.Attributes.Value("redlock.node")
		s, _ := dp.Attributes.Value("redlock.node.state")
		if out[n.AsInt64()] == nil {
			out[n.AsInt64()] = map[string]int64{}
		}
		out[n.AsInt64()][s.AsString()] = dp.Value
	}
	return out
}

// TestNodeStateGauge stops one of five nodes while locks succeed: the
// gauge reports it failing, the others ok, with one series per state.
func TestNodeStateGauge(t *testing.T) {
	h := newHarness(t)
	servers, pools := nodes(t, 5)
	c := newClient(t, pools, redlock.WithObserver(h))
	reg, err := h.obs.ObserveNodes(c)
	require.NoError(t, err)

	ok := map[string]int64{"ok": 1, "silent": 0, "failing": 0, "quarantined": 0, "clock_suspect": 0}
	for i, states := range h.nodeStates(t) {
		assert.Equal(t, ok, states, "node %d before any call", i)
	}
	servers[3].Kill()
	// The stopped node's answer may arrive after the majority decided:
	// lock until the Client has judged it.
	deadline := time.Now().Add(10 * time.Second)
	for h.nodeStates(t)[3]["failing"] != 1 {
		require.True(t, time.Now().Before(deadline), "node 3 never reported failing: %v", h.nodeStates(t))
		l, err := c.TryLock(bg(), "gauge", time.Minute)
		require.NoError(t, err, "four of five nodes serve")
		require.NoError(t, l.Unlock(bg()))
	}
	got := h.nodeStates(t)
	require.Len(t, got, 5)
	for i, states := range got {
		if i == 3 {
			assert.Equal(t, map[string]int64{"ok": 0, "silent": 0, "failing": 1, "quarantined": 0, "clock_suspect": 0}, states)
			continue
		}
		assert.Equal(t, ok, states, "node %d", i)
	}
	var g metricdata.Gauge[int64]
	g, _ = h.metrics(t)["redlock.node.state"].(metricdata.Gauge[int64])
	want := attribute.NewSet(append(addrAttrs(pools[3].Addr()),
		attribute.Int("redlock.node", 3), attribute.String("redlock.node.state", "failing"))...)
	found := false
	for _, dp := range g.DataPoints {
		found = found || (dp.Attributes.Equals(&want) && dp.Value == 1)
	}
	assert.True(t, found, "the series names the node's address: %v", g.DataPoints)

	require.NoError(t, reg.Unregister())
	assert.Empty(t, h.nodeStates(t), "nothing reported once unregistered")
}

func TestObserveNodesNil(t *testing.T) {
	h := newHarness(t)
	_, err := h.obs.ObserveNodes(nil)
	require.ErrorContains(t, err, "nil client")
	_, pools := nodes(t, 1)
	var nilObs *redlockotel.Observer
	reg, err := nilObs.ObserveNodes(newClient(t, pools))
	require.NoError(t, err)
	require.NoError(t, reg.Unregister())
}
