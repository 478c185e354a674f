package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
)

// nodesEnv names the environment variable read when --nodes is not given.
const nodesEnv = "REDLOCK_NODES"

// probeTimeout bounds each node's answer to a status read. A dead node
// refuses at once; this only waits for a node that is up but stalled.
const probeTimeout = time.Second

// fromEnv returns the URLs of --nodes, or of REDLOCK_NODES when the flag was
// not given.
func (u *urlList) fromEnv() ([]string, error) {
	if len(*u) > 0 {
		return *u, nil
	}
	env := os.Getenv(nodesEnv)
	if strings.TrimSpace(env) == "" {
		return nil, fmt.Errorf("no nodes: give --nodes or set %s", nodesEnv)
	}
	var v urlList
	if err := v.Set(env); err != nil {
		return nil, fmt.Errorf("%s: %w", nodesEnv, err)
	}
	return v, nil
}

// openNodes returns one pool per URL. It connects to nothing yet: a node
// that is down shows up on first use. On error no pool is left open. Errors
// never contain a password.
func openNodes(urls []string) ([]pool.Pool, error) {
	pools := make([]pool.Pool, 0, len(urls))
	for _, u := range urls {
		p, err := pool.FromURL(u)
		if err != nil {
			closeNodes(pools)
			return nil, err
		}
		pools = append(pools, p)
	}
	return pools, nil
}

func closeNodes(pools []pool.Pool) {
	for _, p := range pools {
		_ = p.Close()
	}
}

// nodeState is what one node says about a lock key.
type nodeState struct {
	Node int
	Addr string
	// Err is set when the node could not be read; the other fields are
	// then zero.
	Err error
	// Token is the value under the key: the holder's token. Held is false
	// when the key is absent.
	Token string
	Held  bool
	// TTL is the key's remaining time to live, or -1 for a key without
	// expiry (not set by a lock).
	TTL time.Duration
	// Record is the value of the key's holder record (KEY:holder), "" when
	// absent: see holder.go.
	Record string
}

// unreachable reports whether the node did not answer at all, as opposed to
// answering with an error reply.
func (s nodeState) unreachable() bool { return s.Err != nil && unreachable(s.Err) }

// unreachable reports whether err, a node call's error, means the node did
// not answer at all (refused, timed out), rather than with an error reply.
func unreachable(err error) bool {
	var re redis.Error
	return !errors.As(err, &re)
}

// probe reads key and its holder record on every node in parallel, each
// read bounded by timeout, and returns one state per node, in node order.
// It never changes anything.
func probe(ctx context.Context, pools []pool.Pool, key string, timeout time.Duration) []nodeState {
	out := make([]nodeState, len(pools))
	onEveryNode(ctx, pools, timeout, func(ctx context.Context, i int, p pool.Pool) {
		st := nodeState{Node: i, Addr: p.Addr()}
		reply, err := p.Eval(ctx, statusScript, []string{key, nodeHolderKey(p, key)})
		if err == nil {
			err = st.parse(reply)
		}
		st.Err = err
		out[i] = st
	})
	return out
}

// parse reads the reply of status.lua: {value or nil, PTTL in ms, holder
// record or nil}.
func (s *nodeState) parse(reply any) error {
	a, ok := reply.([]any)
	if !ok || len(a) != 3 {
		return fmt.Errorf("unexpected status reply %v", reply)
	}
	pttl, ok := a[1].(int64)
	if !ok {
		return fmt.Errorf("unexpected PTTL %v", a[1])
	}
	if a[0] == nil {
		return nil // -2: absent
	}
	token, ok := a[0].(string)
	if !ok {
		return fmt.Errorf("unexpected value %v", a[0])
	}
	s.Token, s.Held = token, true
	s.TTL = -1
	if pttl >= 0 {
		s.TTL = time.Duration(pttl) * time.Millisecond
	}
	s.Record, _ = a[2].(string) // nil: no record
	return nil
}

// tally sums up the states of all nodes.
type tally struct {
	total, quorum int
	unreachable   int
	loginRefused  int         // answering with a credential error (NOAUTH, WRONGPASS, NOPERM)
	failed        []nodeState // unreachable or answering with an error
	holding       int         // nodes holding any token
	held          int         // nodes holding the most common token
	token         string      // that token
	tokens        int         // distinct tokens seen
}

func tallyStates(states []nodeState) tally {
	t := tally{total: len(states), quorum: len(states)/2 + 1}
	count := map[string]int{}
	for _, s := range states {
		switch {
		case s.Err != nil:
			t.failed = append(t.failed, s)
			if s.unreachable() {
				t.unreachable++
			} else if loginRefused(s.Err) != "" {
				t.loginRefused++
			}
		case s.Held:
			t.holding++
			count[s.Token]++
			if n := count[s.Token]; n > t.held || (n == t.held && s.Token < t.token) {
				t.held, t.token = n, s.Token
			}
		}
	}
	t.tokens = len(count)
	return t
}

// majorityUnreachable reports whether too few nodes answer for any lock to
// be taken: unreachable, or refusing the URLs' credentials.
func (t tally) majorityUnreachable() bool { return t.total-t.unreachable-t.loginRefused < t.quorum }

// failures describes the failed nodes on one line:
// "node 3 (127.0.0.1:7003): connection refused; node 4 (...): ...".
func (t tally) failures() string {
	parts := make([]string, len(t.failed))
	for i, s := range t.failed {
		parts[i] = fmt.Sprintf("node %d (%s): %s", s.Node, s.Addr, shortErr(s.Err))
	}
	return strings.Join(parts, "; ")
}

// shortErr keeps the end of a network error: "dial tcp 127.0.0.1:7003:
// connect: connection refused" says the address twice in our messages.
func shortErr(err error) string {
	msg := err.Error()
	if errors.Is(err, redlock.ErrNodeTimeout) || errors.Is(err, context.DeadlineExceeded) {
		return "no answer in time"
	}
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.HasPrefix(msg, "dial ") {
		return msg[i+2:]
	}
	return msg
}

// explain describes a lock error by its per-node detail:
// "not held on node 0 (host:port), node 2 (host:port); unreachable:
// node 3 (host:port): connection refused; 2 of 5 nodes agreed, 3 needed".
func explain(err error) string {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		var ne *redlock.NodeError
		if errors.As(err, &ne) {
			return fmt.Sprintf("node %d (%s): %s", ne.Node, ne.Addr, shortErr(ne.Err))
		}
		return strings.ReplaceAll(err.Error(), "redlock: ", "")
	}
	var taken, notHeld, pending, down, refused []string
	for _, n := range qe.Nodes {
		name := fmt.Sprintf("node %d (%s)", n.Node, n.Addr)
		switch {
		case isRefusal(n.Err):
			refused = append(refused, name+": "+shortErr(n.Err))
		case errors.Is(n.Err, redlock.ErrTaken):
			taken = append(taken, name)
		case errors.Is(n.Err, redlock.ErrNotHeld):
			notHeld = append(notHeld, name)
		case errors.Is(n.Err, redlock.ErrPending):
			pending = append(pending, name)
		default:
			down = append(down, name+": "+shortErr(n.Err))
		}
	}
	var parts []string
	if qe.Reason != "" {
		parts = append(parts, qe.Reason)
	}
	if len(refused) > 0 {
		parts = append(parts, "refused by "+strings.Join(refused, "; "))
	}
	if len(taken) > 0 {
		parts = append(parts, "held by another owner on "+strings.Join(taken, ", "))
	}
	if len(notHeld) > 0 {
		parts = append(parts, "not held on "+strings.Join(notHeld, ", "))
	}
	if len(down) > 0 {
		parts = append(parts, "unreachable: "+strings.Join(down, "; "))
	}
	if len(pending) > 0 {
		parts = append(parts, "no answer before the decision from "+strings.Join(pending, ", "))
	}
	parts = append(parts, fmt.Sprintf("%d of %d nodes agreed, %d needed", qe.Agreed, qe.Total, qe.Needed))
	return strings.Join(parts, "; ")
}

// isRefusal reports whether a node's cause is one the library decided on
// an answer, not the key's holder: a node that must not count (restart
// quarantine, clock check, another node's server), a key of another kind,
// a lock-delay.
func isRefusal(err error) bool {
	for _, e := range []error{redlock.ErrNodeQuarantined, redlock.ErrNodeClock, redlock.ErrNodeSameServer, redlock.ErrWrongKind, redlock.ErrLockDelay} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// notObtained explains a failed acquisition, and picks the exit code by the library's rule
// (redlock.IsContended): conflict (--conflict-exit-code) when the key is
// held by another owner; 75 when it is held as another kind or kept by its
// lock-delay, which no later run of this command clears by itself; 69
// (unavailable) otherwise: too many nodes down, refusing the credentials,
// or not counted for their health (the restart quarantine, the clock
// check), told by the attempt's own answers (explain). For a held key, t
// (the nodes' state read after the attempt) says by whom and where; err
// nil is the read before any attempt, which found a majority down.
func notObtained(err error, t tally, conflict int) (string, int) {
	var reasons []string
	if err != nil && !redlock.IsContended(err) {
		// Not held: the attempt's answers say which nodes failed, and how.
		return explain(err), exitUnavailable
	}
	if isRefusal(err) {
		// The attempt's own answers say why (a quarantined node, another
		// kind, a lock-delay); what the read finds on the nodes may be the
		// attempt's own key, whose cleanup is still on its way.
		reasons = append(reasons, explain(err))
	} else if n := t.holding; n > 0 {
		owner := "another owner"
		if t.tokens > 1 {
			owner = fmt.Sprintf("%d other owners", t.tokens)
		}
		reasons = append(reasons, fmt.Sprintf("held by %s on %d of %d nodes", owner, n, t.total))
	}
	if len(t.failed) > 0 {
		what := "unreachable"
		if len(t.failed) > t.unreachable {
			what = "unreachable or failing" // some answered with an error
		}
		reasons = append(reasons, fmt.Sprintf("%d of %d nodes %s (%s)", len(t.failed), t.total, what, t.failures()))
	}
	if len(reasons) == 0 {
		// The key is free now: the holder let go just after our attempt,
		// or the attempt itself was too slow.
		reasons = append(reasons, explain(err)+"; the key is free now")
	}
	code := conflict
	switch {
	case err == nil:
		code = exitUnavailable // the read before the attempt: a majority down
	case errors.Is(err, redlock.ErrWrongKind) || errors.Is(err, redlock.ErrLockDelay):
		code = exitTempFail
	}
	return strings.Join(reasons, ", "), code
}
