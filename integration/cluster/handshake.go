package cluster

import (
	"fmt"
	"testing"
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// HandshakeToxic is the toxiproxy toxic type (registered as
// "handshake_latency") that holds back each of a connection's first Chunks
// chunks by Latency milliseconds, and nothing after them: a connection that
// is slow to set up (a TLS handshake, the client's HELLO through a loaded
// proxy) and fast once set up. Open connections past their first chunks
// are not affected. Its state is per connection.
type HandshakeToxic struct {
	Latency int64 `json:"latency"` // milliseconds
	Chunks  int   `json:"chunks"`  // 0: 1
}

// handshakeState counts the chunks held back on one connection's stream.
type handshakeState struct{ held int }

// NewState implements toxics.StatefulToxic.
func (t *HandshakeToxic) NewState() any { return new(handshakeState) }

// Pipe implements toxics.Toxic.
func (t *HandshakeToxic) Pipe(stub *toxics.ToxicStub) {
	st, _ := stub.State.(*handshakeState)
	if st == nil {
		st = new(handshakeState)
		stub.State = st
	}
	chunks := max(t.Chunks, 1)
	for {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c == nil {
				stub.Close()
				return
			}
			if st.held < chunks {
				st.held++
				select {
				case <-time.After(time.Duration(t.Latency) * time.Millisecond):
				case <-stub.Interrupt:
					stub.Output <- c // keep the data; the delay ends with the toxic
					return
				}
			}
			stub.Output <- c
		}
	}
}

func init() {
	toxics.Register("handshake_latency", new(HandshakeToxic))
}

// SlowHandshake holds back the first chunks (at least 1) that clients send
// on each connection to the node by d each: with chunks 1, the first command
// on a new connection (go-redis's HELLO) waits d, and nothing after it
// does. A connection open when it is installed has its next chunks held
// back once. Heal removes it.
func (n *Node) SlowHandshake(d time.Duration, chunks int) error {
	return n.px.toxic("handshake_latency", Upstream, map[string]any{"latency": d.Milliseconds(), "chunks": chunks})
}

// SlowHandshakeProxy starts an in-process proxy to upstream whose
// connections are slow to set up as with Node.SlowHandshake, for servers
// the harness does not run (TLS nodes), and returns its address. It is
// stopped when tb ends.
func SlowHandshakeProxy(tb testing.TB, upstream string, d time.Duration, chunks int) string {
	tb.Helper()
	px, err := newProxy(newProxyServer(), fmt.Sprintf("slow-%s", upstream), upstream)
	if err != nil {
		tb.Fatalf("cluster: %v", err)
	}
	tb.Cleanup(px.close)
	if err := px.toxic("handshake_latency", Upstream, map[string]any{"latency": d.Milliseconds(), "chunks": chunks}); err != nil {
		tb.Fatalf("cluster: %v", err)
	}
	return px.addr
}
