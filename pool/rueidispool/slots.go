package rueidispool

import (
	"context"
	"net"
	"strconv"
)

// master returns the address of the master that owns slot, reading the
// cluster's slot map when it has none; "" if it cannot tell.
func (l *clusterListener) master(ctx context.Context, slot int) string {
	l.slotsMu.Lock()
	if l.owners != nil {
		defer l.slotsMu.Unlock()
		return l.owners[slot]
	}
	l.slotsMu.Unlock()
	sctx, cancel := context.WithTimeout(ctx, l.StepBound())
	owners := l.readSlots(sctx)
	cancel()
	if owners == nil {
		return ""
	}
	l.slotsMu.Lock()
	defer l.slotsMu.Unlock()
	l.owners = owners
	return owners[slot]
}

// readSlots reads the masters of the slots with CLUSTER SLOTS, from any
// node; nil on failure.
func (l *clusterListener) readSlots(ctx context.Context) map[int]string {
	ranges, err := l.client.Do(ctx, l.client.B().ClusterSlots().Build()).ToArray()
	if err != nil {
		return nil
	}
	owners := make(map[int]string)
	for _, r := range ranges {
		v, err := r.ToArray()
		if err != nil || len(v) < 3 {
			continue
		}
		from, err1 := v[0].AsInt64()
		to, err2 := v[1].AsInt64()
		m, err3 := v[2].ToArray()
		if err1 != nil || err2 != nil || err3 != nil || len(m) < 2 {
			continue
		}
		host, err1 := m[0].ToString()
		port, err2 := m[1].AsInt64()
		if err1 != nil || err2 != nil || host == "" || host == "?" {
			continue
		}
		addr := net.JoinHostPort(host, strconv.FormatInt(port, 10))
		for slot := from; slot <= to; slot++ {
			owners[int(slot)] = addr
		}
	}
	return owners
}
