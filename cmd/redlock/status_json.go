package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// statusJSON is "redlock status --json": the same reading of the same
// redlock.KeyStatus as the table (keyView, its verdict and summary, rowOf),
// as one object. Its fields are documented in docs/cli.md; scripts rely on
// their names, so add fields rather than rename them.
type statusJSON struct {
	Key string `json:"key"`
	// Kind is KeyStatus.Kind: lock, readers, permits, a Redis type, or "".
	Kind string `json:"kind"`
	// Verdict names the exit code: held (0), free (1), neither (3),
	// unavailable (69).
	Verdict string `json:"verdict"`
	// Summary is the table's summary line, without "summary: ".
	Summary  string `json:"summary"`
	Held     bool   `json:"held"`
	Token    string `json:"token"`
	Holders  int    `json:"holders"`
	Needed   int    `json:"needed"`
	Total    int    `json:"total"`
	Answered int    `json:"answered"`
	// TTLMillis is KeyStatus.TTL: 0 when not held, -1 without expiry.
	TTLMillis int64 `json:"ttl_ms"`
	// Holder is the record of a held lock taken by redlock run; null
	// otherwise.
	Holder *holderJSON `json:"holder"`
	Nodes  []nodeJSON  `json:"nodes"`
}

// holderJSON is who holds a lock taken by redlock run.
type holderJSON struct {
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
	Command string    `json:"command"`
}

// nodeJSON is one node's entry, a line of the table.
type nodeJSON struct {
	Node    int    `json:"node"`
	Address string `json:"address"`
	// State is unreachable, error, free, held, expired or foreign.
	State string `json:"state"`
	Kind  string `json:"kind"`
	Token string `json:"token"`
	// Leases counts the live holds on the node (NodeStatus.Leases).
	Leases int `json:"leases"`
	// TTLMillis is the key's remaining TTL on the node, -1 without
	// expiry, null where the node does not have the key or did not answer.
	TTLMillis *int64 `json:"ttl_ms"`
	// QuarantinedMillis is how much longer the restart quarantine keeps
	// the node out of every majority (NodeStatus.Quarantined), 0 when it
	// counts.
	QuarantinedMillis int64 `json:"quarantined_ms"`
	// Error is why the node could not be read; absent when it answered.
	Error string `json:"error,omitempty"`
}

// showStatusJSON prints st as one JSON object on one line, and returns the
// verdict's exit code, as showStatus does. who is called only for a held
// lock.
func showStatusJSON(stdout, stderr io.Writer, st redlock.KeyStatus, who func() (holder, bool)) int {
	v := newKeyView(st)
	vd := v.verdict()
	out := statusJSON{
		Key: st.Key, Kind: st.Kind, Verdict: vd.String(),
		Summary: strings.TrimPrefix(v.summary(vd), "summary: "),
		Held:    st.Held, Token: st.Token,
		Holders: st.Holders, Needed: st.Needed, Total: st.Total, Answered: st.Answered,
		TTLMillis: millis(st.TTL),
		Nodes:     make([]nodeJSON, len(st.Nodes)),
	}
	if vd == held && v.Kind == kindLock {
		if h, ok := who(); ok {
			out.Holder = &holderJSON{Host: h.Host, PID: h.PID, Since: h.Since, Command: h.Command}
		}
	}
	for i, n := range st.Nodes {
		r := rowOf(n)
		out.Nodes[i] = nodeJSON{Node: n.Node, Address: n.Addr, State: r.state, Kind: r.kind, Token: r.token, Leases: n.Leases,
			QuarantinedMillis: n.Quarantined.Milliseconds()}
		if r.present {
			ms := millis(r.ttl)
			out.Nodes[i].TTLMillis = &ms
		}
		if n.Err != nil {
			out.Nodes[i].Error = n.Err.Error()
		}
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false) // keys and tokens as they are
	if err := enc.Encode(out); err != nil {
		fmt.Fprintf(stderr, "redlock status: %v\n", err)
		return exitFailure
	}
	return verdictExit(stderr, v, vd)
}

// millis is d in whole milliseconds, keeping -1 (no expiry) as -1.
func millis(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// String names the verdict as the JSON output does.
func (vd verdict) String() string {
	switch vd {
	case held:
		return "held"
	case free:
		return "free"
	case unavailable:
		return "unavailable"
	default:
		return "neither"
	}
}
