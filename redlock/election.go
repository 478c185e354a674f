package redlock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/redlockgo/redlock/internal/keyspace"
)

// Leader election (docs/election.md). A Leadership is an exclusive Lock
// on the election's key, taken with Lock (campaigners wait in the nodes'
// FIFO queue, and a Resign hands the key to the next at once), WithFencing
// (the term is the fence) and WithAutoExtend (kept alive until Resign, loss
// or Close). The leader's value lives next to the key in a record (a hash:
// token, value, term, rev) that is written only while the key holds the
// leader's token, and believed by Leader only where it still does.

// MaxLeaderValue is the longest value, in bytes, that Campaign and Proclaim
// accept. The value is written to every node and read by every Leader call:
// it names the leader (an address, an id), it is not a payload.
const MaxLeaderValue = 64 << 10

// electionKey returns the lock key of an election: a name under the
// reserved prefix "redlock:" built from the election's name
// (keyspace.Election), in the name's cluster slot, so that no lock key and
// no other election's name reaches it; or an error when name is empty or
// itself under the prefix.
func electionKey(election string) (string, error) {
	key, err := keyspace.Election(election)
	if err != nil {
		return "", fmt.Errorf("redlock: %w", err)
	}
	return key, nil
}

// checkElection validates the election name and the leader's value, and
// returns the election's lock key.
func checkElection(election, value string, needValue bool) (string, error) {
	key, err := electionKey(election)
	if err != nil || !needValue {
		return key, err
	}
	if value == "" {
		return "", errors.New("redlock: empty leader value")
	}
	if len(value) > MaxLeaderValue {
		return "", fmt.Errorf("redlock: leader value of %d bytes exceeds MaxLeaderValue (%d)", len(value), MaxLeaderValue)
	}
	return key, nil
}

// Leadership is the leadership of one election, held by one campaigner on
// a majority of the nodes. It is kept alive in the background until
// Resign, its loss, or the Client's Close; Done tells when it ends. It is
// safe for concurrent use; Proclaim and Resign are serialised.
type Leadership struct {
	c        *Client
	l        *Lock
	election string

	opMu     sync.Mutex // serialises Proclaim and Resign
	resigned bool       // under opMu

	mu    sync.Mutex
	value string
	rev   uint64 // the last revision written (or tried), under mu

	ctxOnce sync.Once       // makes ctx on the first Context call (lead.go)
	ctx     context.Context // ends with the leadership, its cause ls.Err()
}

// errNilLeadership is the error of every call on a nil Leadership.
var errNilLeadership = fmt.Errorf("%w: nil leadership", ErrNotHeld)

// errResigned is Err after Resign.
var errResigned = fmt.Errorf("%w: resigned", ErrNotHeld)

// Campaign makes the caller the leader of election, with value, and blocks
// until it is, ctx ends or the Client closes. Campaigners are served in
// arrival order across Clients: a Resign hands the leadership to the next
// at once, and a leader that vanished is succeeded once its ttl ran out.
// The leadership is kept alive until Resign; when it can no longer be
// guaranteed, Done is closed and Err wraps ErrLockLost. Its Term is
// strictly greater than every earlier leader's (a fencing token), and its
// value is recorded on a majority before Campaign returns. On failure the
// error wraps ErrNotObtained, and ctx.Err() when ctx ended the wait;
// nothing is left held.
//
// election is refused as TryLock refuses a key, without calling a node;
// any other name is an election apart from every lock and other election.
// value must not be empty nor longer than MaxLeaderValue; ttl is as for
// Lock, and must leave room to auto-extend (WithAutoExtend).
func (c *Client) Campaign(ctx context.Context, election, value string, ttl time.Duration) (*Leadership, error) {
	if c == nil {
		return nil, errNilClient
	}
	if ctx == nil {
		return nil, errors.New("redlock: nil context")
	}
	key, err := checkElection(election, value, true)
	if err != nil {
		return nil, err
	}
	for {
		l, err := c.Lock(ctx, key, ttl, WithFencing(), WithAutoExtend(0), asElection())
		if err != nil {
			return nil, err
		}
		ls := &Leadership{c: c, l: l, election: election, value: value}
		err = ls.recordHeld(ctx, value)
		if err == nil {
			return ls, nil
		}
		// The lock was won but the record reached no majority while it
		// lasted: give the lock back and campaign again, a node timeout
		// later, until ctx ends or the Client closes.
		uerr := l.Unlock(context.WithoutCancel(ctx))
		err = fmt.Errorf("%w: the leader's value was not recorded: %w", ErrNotObtained, err)
		if ctx.Err() != nil || !c.pause(ctx, c.nodeTimeout(ttl)) {
			return nil, withContext(errors.Join(err, uerr), ctx.Err())
		}
	}
}

// recordTries is how many times Campaign writes the leader record under
// one won lock before it gives the lock back and campaigns again.
const recordTries = 3

// recordHeld writes the campaign's leader record (record) under the lock
// Campaign won, again a node timeout after a try that failed while the
// lock still holds a majority (lost or late messages), up to recordTries
// times. Giving the lock back at the first miss would hand the election
// to the next campaigner and queue this one behind every other: under
// loss, contenders that each miss once pass the key between them and
// nobody leads (the simulation saw it for seconds on end). It returns
// the last try's error.
func (ls *Leadership) recordHeld(ctx context.Context, value string) error {
	c, l := ls.c, ls.l
	err := ls.record(ctx, value, 0)
	for try := 1; try < recordTries && err != nil && !errors.Is(err, ErrNotHeld); try++ {
		if l.Err() != nil || !c.pause(ctx, c.nodeTimeout(l.ttl)) || !c.cfg.clock.Now().Before(l.Until()) {
			break
		}
		err = ls.record(ctx, value, 0)
	}
	return err
}

// pause waits d, and reports false if ctx ended or the Client closed first.
func (c *Client) pause(ctx context.Context, d time.Duration) bool {
	t := c.cfg.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-c.life.closing:
		return false
	case <-t.C():
		return true
	}
}

// record writes the leader record {token, value, term, rev} on every node
// where the election key holds the leader's token, and returns once a
// majority has, each node call bounded by the node timeout. Only this
// Leadership writes its record, one call at a time (opMu, or Campaign).
func (ls *Leadership) record(ctx context.Context, value string, rev uint64) error {
	c, l := ls.c, ls.l
	done, err := c.begin()
	if err != nil {
		return err
	}
	defer done()
	term, r := strconv.FormatUint(l.Fence(), 10), strconv.FormatUint(rev, 10)
	res := c.onHolders(ctx, l, func(ctx context.Context, i int) (bool, error) {
		return c.env.RecordLeader(ctx, i, l.key, l.token, value, term, r)
	})
	if res.Reached {
		return nil
	}
	if c.lostMajority(res) {
		// A majority no longer holds our token: no node of it records the value.
		return withContext(c.quorumError("proclaim", ErrNotHeld, res), ctx.Err())
	}
	err = c.quorumError("proclaim", ErrNotProclaimed, res)
	if rev > 0 {
		err = fmt.Errorf("%w; the outcome is unknown: a node that did not answer may still record the value, and Leader reports it once a majority has", err)
	}
	return withContext(err, ctx.Err())
}

// Term returns the leadership's term: its fencing token, strictly greater
// than every earlier leader's term of the election. 0 for a nil
// Leadership.
func (ls *Leadership) Term() uint64 {
	if ls == nil {
		return 0
	}
	return ls.l.Fence()
}

// Value returns the leader's value: the campaign's, or the last one
// Proclaim recorded. "" for a nil Leadership.
func (ls *Leadership) Value() string {
	if ls == nil {
		return ""
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.value
}

// Until returns the end of the leadership's current validity (see
// Lock.Until), moved on by each extension; the zero time for a nil
// Leadership. Act as the leader only before it, or fence with Term.
func (ls *Leadership) Until() time.Time {
	if ls == nil {
		return time.Time{}
	}
	return ls.l.Until()
}

// Done returns a channel closed when the leadership ends: on Resign, on
// its loss, or when the Client closes. nil (never ready) for a nil
// Leadership.
func (ls *Leadership) Done() <-chan struct{} {
	if ls == nil {
		return nil
	}
	return ls.l.Done()
}

// Err returns nil while the leadership lasts. After Done is closed it
// returns why: an error wrapping ErrLockLost (with the failed extension's
// per-node detail) when it was lost, wrapping ErrLockLost and ErrClosed
// when the Client closed, or wrapping ErrNotHeld after Resign. A nil
// Leadership returns an error wrapping ErrNotHeld.
func (ls *Leadership) Err() error {
	if ls == nil {
		return errNilLeadership
	}
	err := ls.l.Err()
	if errors.Is(err, errUnlocked) {
		return errResigned
	}
	return err
}

// Proclaim replaces the leader's value with value, under the same token
// and term, and returns once a majority of the nodes recorded it. It fails,
// leaving Value unchanged, when the leadership has ended (Resign, loss,
// validity over: the error wraps ErrNotHeld) or when too few nodes
// answered in time (it wraps ErrNotProclaimed). The outcome of the latter
// is unknown, and the error says so: the value may be on a minority, which
// Leader does not report, but a node that did not answer in time (paused,
// slow) may still record it, and once a majority has, Leader and Observe
// report the new value while Value still returns the old one. A later
// Proclaim outranks it either way (each carries a higher revision), so
// proclaiming again settles what observers see. value is checked as
// Campaign checks it.
func (ls *Leadership) Proclaim(ctx context.Context, value string) error {
	if ls == nil {
		return errNilLeadership
	}
	if ctx == nil {
		return errors.New("redlock: nil context")
	}
	if _, err := checkElection(ls.election, value, true); err != nil {
		return err
	}
	ls.opMu.Lock()
	defer ls.opMu.Unlock()
	if err := ls.ended(); err != nil {
		return err
	}
	ls.mu.Lock()
	ls.rev++ // even when this one fails: the next must outrank a partial write
	rev := ls.rev
	ls.mu.Unlock()
	if err := ls.record(ctx, value, rev); err != nil {
		return err
	}
	ls.mu.Lock()
	if rev == ls.rev {
		ls.value = value
	}
	ls.mu.Unlock()
	return nil
}

// ended returns why the leadership cannot act any more, or nil. The caller
// holds opMu.
func (ls *Leadership) ended() error {
	if ls.resigned {
		return errResigned
	}
	if err := ls.l.Err(); err != nil {
		return fmt.Errorf("%w: %w", ErrNotHeld, err)
	}
	if now := ls.c.cfg.clock.Now(); !now.Before(ls.l.Until()) {
		return fmt.Errorf("%w: validity ended %v ago", ErrNotHeld, now.Sub(ls.l.Until()))
	}
	return nil
}

// Resign ends the leadership: it stops keeping it alive, releases the
// election key on every node (the first waiting campaigner, if any, is
// handed the leadership at once) and then deletes the leader record where
// it is still ours. It returns the release's error (see Lock.Unlock):
// nil when a majority released it, or an error wrapping ErrNotHeld (the
// leadership had already ended or been resigned) or ErrNotReleased. Each
// node call is bounded by the node timeout, even with ctx canceled.
func (ls *Leadership) Resign(ctx context.Context) error {
	if ls == nil {
		return errNilLeadership
	}
	if ctx == nil {
		ctx = context.Background()
	}
	ls.opMu.Lock()
	defer ls.opMu.Unlock()
	if ls.resigned {
		return errResigned
	}
	ls.resigned = true
	err := ls.l.Unlock(ctx)
	ls.forget(ctx)
	return err
}

// forget deletes the leader record on every node where it names this
// leadership's token, each call bounded by the node timeout. It is tidying
// only: Leader never believes a record whose token the key does not hold,
// so a node it misses (down, slow) keeps a record nobody reads, until the
// next leader's replaces it.
func (ls *Leadership) forget(ctx context.Context) {
	c, l := ls.c, ls.l
	done, err := c.begin()
	if err != nil {
		return // closed: the record stays unread, as above
	}
	defer done()
	c.each(context.WithoutCancel(ctx), c.nodes.All(), c.nodeTimeout(l.ttl), func(ctx context.Context, i int) (bool, error) {
		return c.env.DropLeader(ctx, i, l.key, l.token)
	})
}
