package node

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redlockgo/redlock/pool"
)

// ErrSameServer is the per-node cause when a node said yes but another
// node of the Set is known to be the same Redis server under another
// address: its yes would count twice.
var ErrSameServer = errors.New("redlock: two nodes are one server")

// SameServerError is the error of an answer from node Node (at Addr) that
// does not count because node Other (at OtherAddr) is the same server: both
// Pools learned the same run (RunID, INFO server's run_id). It wraps
// ErrSameServer, and Answer when there is one.
type SameServerError struct {
	Node, Other     int
	Addr, OtherAddr string
	RunID           string
	// Answer is the node's refusal about the key (Config.Refusal) when it
	// did not say yes: it does not count either, as a holder or otherwise.
	// nil for a yes.
	Answer error
}

func (e *SameServerError) Error() string {
	msg := fmt.Sprintf("%s and %s (node %d) are one server (run_id %s): a server's answer counts once, "+
		"so neither counts; give each node a server of its own", e.Addr, e.OtherAddr, e.Other, e.RunID)
	if e.Answer != nil {
		msg += " (it answered: " + strings.TrimPrefix(e.Answer.Error(), "redlock: ") + ")"
	}
	return msg
}

// Unwrap returns ErrSameServer and Answer, if any.
func (e *SameServerError) Unwrap() []error {
	if e.Answer == nil {
		return []error{ErrSameServer}
	}
	return []error{ErrSameServer, e.Answer}
}

// servers is what the same-server checks of a Set compare: ids[i] is node
// i's Pool as a pool.Identifier, nil when it tells no identity. It is
// filled while the Set is built (watch) and only read afterwards.
type servers struct {
	ids []pool.Identifier
}

// newServers returns the servers of a Set of n nodes, none watched yet.
func newServers(n int) *servers { return &servers{ids: make([]pool.Identifier, n)} }

// watch records node i's identity source and returns its same-server
// check.
func (v *servers) watch(s *Set, i int, id pool.Identifier) check {
	v.ids[i] = id
	return &sameServer{servers: v, set: s}
}

// sameServer is the check that node i is not a server another node of the
// Set also reaches: two addresses of one server (127.0.0.1 and localhost,
// a DNS name and its IP, a proxy in front of a node already listed) would
// give that server two votes, and a majority of votes would no longer be a
// majority of servers. New cannot see it (it does no I/O), and an address
// may come to lead to another server later (DNS, a proxy), so it is
// judged on every yes, by the runs the Pools learned at their latest
// connections.
type sameServer struct {
	servers *servers
	set     *Set
	last    lastReport
}

// check returns a *SameServerError when another node's Pool learned the
// run node i's Pool learned (the same run_id: the same server process),
// and nil otherwise: when either identity is not known yet, or its run_id
// is hidden (INFO refused). It reports the first time a run of the node is
// found to be another node's.
//
// Each Pool learns its run before it delivers an answer, so of two nodes
// that are one server, the yes judged second always finds the first's
// run: a decision counts at most one of them, and once both are known,
// neither.
func (c *sameServer) check(ctx context.Context, i int, _ string) error {
	err := c.find(i)
	if err == nil {
		return nil
	}
	c.last.report(ctx, c.set, i, SameServer, err.RunID, err)
	return err
}

// find returns a *SameServerError when another node's Pool learned the run
// node i's Pool learned, nil otherwise. It reports nothing.
func (c *sameServer) find(i int) *SameServerError {
	id, ok := c.servers.ids[i].Identity()
	if !ok || id.RunID == "" {
		return nil
	}
	for j, other := range c.servers.ids {
		if j == i || other == nil {
			continue
		}
		if oid, ok := other.Identity(); !ok || oid.RunID != id.RunID {
			continue
		}
		return &SameServerError{Node: i, Other: j, Addr: c.set.Addr(i), OtherAddr: c.set.Addr(j), RunID: id.RunID}
	}
	return nil
}

// Refused returns answer, node i's refusal about a key, as it counts: a
// *SameServerError carrying it when another node of the Set is known to be
// node i's server (sameServer), so that it counts neither as a holder nor
// as a vote; else answer itself. It reports nothing (the node's yes does).
// A server under two addresses refuses twice, and refuses itself when its
// two nodes race for one key (a multi-lock's keys): counted as holders,
// those refusals would read as contention where the cause is the
// configuration.
func (s *Set) Refused(i int, answer error) error {
	for _, c := range s.checks[i] {
		if c, ok := c.(*sameServer); ok {
			if same := c.find(i); same != nil {
				same.Answer = answer
				return same
			}
		}
	}
	return answer
}
