package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/redlockgo/redlock/internal/keyslot"
	"github.com/redlockgo/redlock/internal/keyspace"
	"github.com/redlockgo/redlock/internal/lease"
)

// Every acquisition (TryLock, Lock, Do, TryDo, RLock, TryRLock, the
// permits, TryLockAll, LockAll, DoAll, Resume, an owner's Lock, Campaign)
// is a request, and takes one path (engine.go): prepare (this file), a
// strategy (strategy.go), hold, and one exit.

// request is one acquisition as its entry point asks for it.
type request struct {
	kind  kindName
	key   string   // the lock key (a multi-lock: see keys)
	keys  []string // a multi-lock's keys, as the caller gave them
	limit int      // a permit's limit
	token string   // Resume's token
	ttl   time.Duration
	opts  []LockOption
	wait  bool // a blocking call: Lock, RLock, AcquirePermit, LockAll
}

// kindName is the kind an entry point asks for; prepare turns it into a
// lease.Kind (an exclusive lock becomes an owner's hold WithOwner).
type kindName uint8

const (
	exclusiveKind kindName = iota
	readerKind
	permitKind
	multiKind
	resumeKind // the exclusive hold a token has already (Resume)
)

// how is what an acquisition does until it holds (strategy.go); chosen
// once, by prepare.
type how uint8

const (
	tryOnce  how = iota // one attempt, and up to two more to settle a split
	retrying            // attempts paced by the retry strategy, woken by releases
	queued              // a first try, then the nodes' queue of waiters (Lock)
	resumed             // the hold a token has, extended (Resume)
)

// plan is a request prepared: its arguments checked, its kind and
// strategy chosen, its TTL in whole milliseconds (lc.ttl), all once.
type plan struct {
	key   string
	token string // Resume's
	lc    lockConfig
	how   how
	wait  bool
	kind  lease.Kind      // every kind but the exclusive lock's, which is ex
	ex    lease.Exclusive // an exclusive lock's kind; a Lock keeps a copy
	start time.Time
}

// prepare checks r's arguments and chooses its kind and strategy. It
// calls no node; on failure the acquisition ends with its error.
func (c *Client) prepare(ctx context.Context, r request) (plan, error) {
	if err := r.checkShape(c); err != nil {
		return plan{}, err
	}
	lc, err := c.check(ctx, r.key, r.ttl, r.opts)
	if err != nil {
		return plan{}, err
	}
	p := plan{key: r.key, token: r.token, lc: lc, wait: r.wait}
	if err := c.choose(&p, r); err != nil {
		return plan{}, err
	}
	p.start = c.cfg.clock.Now()
	return p, nil
}

// checkShape checks what is particular to r's kind before the arguments
// every acquisition shares: a multi-lock's keys (sorted, each checked;
// r.key becomes the first), a permit's limit, Resume's token.
func (r *request) checkShape(c *Client) (err error) {
	switch r.kind {
	case multiKind:
		if r.keys, err = normalKeys(r.keys); err == nil && c.nodes.AnyCluster() {
			err = oneSlot(r.keys)
		}
		if err == nil {
			r.key = r.keys[0]
		}
	case permitKind:
		if r.limit < 1 || r.limit > MaxPermits {
			err = fmt.Errorf("%w (%d), got %d", errLimit, MaxPermits, r.limit)
		}
	}
	return err
}

// choose sets p's kind and strategy for r, and refuses the options r's
// kind does not take.
func (c *Client) choose(p *plan, r request) error {
	lc, delay := p.lc, c.cfg.lockDelay > 0
	switch {
	case r.kind == resumeKind && lc.owner != "" && r.token != "":
		return errResumeOwner
	case r.kind != exclusiveKind && r.kind != resumeKind && lc.owner != "":
		return errOwnerKind
	}
	switch r.kind {
	case exclusiveKind:
		return c.chooseExclusive(p, delay)
	case resumeKind:
		p.ex, p.how = lease.NewExclusive(r.key, lc.fencing, delay), resumed
		return checkResumable(r.token)
	case readerKind:
		p.kind = lease.NewReader(r.key)
	case permitKind:
		p.kind = lease.NewPermit(r.key, r.limit)
	case multiKind:
		m := lease.NewMulti(r.keys, lc.fencing)
		if r.wait {
			m = m.Waiting(c.cfg.clock.Now().UnixMicro()) // LockAll, DoAll: in the keys' queues
		}
		p.kind = m
	}
	p.how = tryOnce
	if r.wait {
		p.how = retrying
	}
	return nil
}

// chooseExclusive is choose for TryLock, Lock and their kin: an owner's
// holds retry and are woken (they do not queue); a plain lock queues when
// it waits or is fair.
func (c *Client) chooseExclusive(p *plan, delay bool) error {
	lc := p.lc
	if lc.owner != "" {
		switch {
		case lc.fair:
			return errors.New("redlock: WithFairness cannot be combined with WithOwner")
		case lc.heal:
			return errors.New("redlock: WithRepairOnExtend cannot be combined with WithOwner")
		}
		p.kind, p.how = lease.NewOwned(p.key, lc.owner, lc.fencing), tryOnce
		if p.wait {
			p.how = retrying
		}
		return nil
	}
	p.ex, p.how = lease.NewExclusive(p.key, lc.fencing, delay), tryOnce
	if lc.election {
		p.ex = lease.NewElection(p.key, delay)
	}
	if p.wait || lc.fair {
		p.how = queued
	}
	return nil
}

// errOwnerKind is the error of an owner given to a call that takes none.
var errOwnerKind = errors.New("redlock: WithOwner applies to Lock, TryLock and Do only")

// errResumeOwner is Resume's error for an owner's holds.
var errResumeOwner = errors.New("redlock: an owner's holds cannot be resumed")

// checkResumable refuses a token Resume cannot carry on with: empty, an
// owner's value (it would release every hold of the owner at once), or a
// multi-lock's (one key of it cannot be resumed alone).
func checkResumable(token string) error {
	switch {
	case token == "":
		return errors.New("redlock: empty token")
	case lease.IsOwnerValue(token):
		return errResumeOwner
	case lease.IsMultiToken(token):
		return fmt.Errorf("%w: the token is a multi-lock's, which cannot be resumed one key at a time", ErrWrongKind)
	}
	return nil
}

// check validates the arguments common to every acquisition and returns
// the call's options, with its TTL in whole milliseconds.
func (c *Client) check(ctx context.Context, key string, ttl time.Duration, opts []LockOption) (lockConfig, error) {
	if ctx == nil {
		return lockConfig{}, errors.New("redlock: nil context")
	}
	if c.life.draining.Load() {
		return lockConfig{}, ErrClosed // Shutdown has begun
	}
	lc, err := c.lockConfig(opts)
	if err != nil {
		return lockConfig{}, err
	}
	if !lc.election {
		err = checkKey(key)
	}
	if err == nil {
		err = c.checkTTL(ttl)
	}
	if err == nil && lc.autoExtend {
		err = c.checkKeepable(ttl)
	}
	if err == nil {
		err = c.checkMaxHold(ttl, lc)
	}
	lc.ttl = ttl.Truncate(time.Millisecond) // Redis keeps milliseconds
	return lc, err
}

// checkKey refuses a caller's key that is empty, or under the library's
// reserved prefix "redlock:", where every key the library writes beside a
// caller's lives (keyspace.Check, docs/design.md).
func checkKey(key string) error {
	if err := keyspace.Check(key); err != nil {
		return fmt.Errorf("redlock: %w", err)
	}
	return nil
}

// asElection marks an acquisition as an election's (Campaign): its key is
// a companion of the election's name, built and checked by
// keyspace.Election.
func asElection() LockOption { return func(c *lockConfig) { c.election = true } }

// checkKeepable refuses a ttl too short for auto-extension: from the start
// of the acquisition, an extension bounded by the node timeout must fit
// before the loss margin, or the lock would be lost as soon as it is taken.
func (c *Client) checkKeepable(ttl time.Duration) error {
	ttl = ttl.Truncate(time.Millisecond)
	nt, margin, validity := c.nodeTimeout(ttl), c.lossMargin(ttl), ttl-c.drift(ttl)
	if margin+nt < validity {
		return nil
	}
	return fmt.Errorf("redlock: ttl %v is too short to auto-extend with node timeout %v: "+
		"validity %v must exceed the loss margin %v (the larger of ttl/10 and twice the node timeout) "+
		"plus one node timeout; use a longer ttl or a shorter node timeout", ttl, nt, validity, margin)
}

// checkMaxHold refuses a cap shorter than ttl: the lock would be held past
// it from the start, whatever the keeper does.
func (c *Client) checkMaxHold(ttl time.Duration, lc lockConfig) error {
	if lc.maxHold == 0 || lc.maxHold >= ttl {
		return nil
	}
	return fmt.Errorf("redlock: max hold %v is shorter than the ttl %v: the lock would be held past it "+
		"before any extension; use a max hold of at least the ttl, or a shorter ttl", lc.maxHold, ttl)
}

// MaxKeys is the most keys one multi-lock takes (TryLockAll, LockAll,
// DoAll); more is an error, and no node is called. Each node handles all of
// a multi-lock's keys in one script, within one node timeout, and its
// release touches six keys for each: on a loaded 2-core machine under the
// race detector, MaxKeys keys took up to about 20ms to acquire (fenced)
// and 40ms to release per call, against the 500ms default node timeout of
// a TTL of 10s or more, while 10,000 keys took longer than that, so that
// such a lock was never obtained with fencing and its release was reported
// failed. A shorter node timeout (WithNodeTimeout, or a TTL under 10s,
// whose default is ttl/20) carries fewer keys in an acquisition: allow
// about 50µs per key. An Unlock's node calls allow that much per key by
// themselves (up to MaxNodeTimeout), since a release costs no validity.
const MaxKeys = 1000

// normalKeys sorts keys and drops duplicates. It refuses no keys, more than
// MaxKeys, and a key that checkKey refuses: so no key of the set is a name
// of the library's (under "redlock:"), such as another key's fence counter
// or queue, whose contents the lock would overwrite.
func normalKeys(keys []string) ([]string, error) {
	if len(keys) == 0 {
		return nil, errors.New("redlock: no keys")
	}
	keys = slices.Clone(keys)
	slices.Sort(keys)
	keys = slices.Compact(keys)
	if len(keys) > MaxKeys {
		return nil, fmt.Errorf("redlock: a multi-lock takes at most %d keys (MaxKeys), got %d; split the set, or lock a key that stands for it", MaxKeys, len(keys))
	}
	for _, k := range keys {
		if err := checkKey(k); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// oneSlot refuses keys that do not all hash to one slot: on a node that is
// a Redis Cluster, one script cannot touch them together, and every
// cluster node would refuse the call (CROSSSLOT). Refused here, before any
// node is called, the error says how to fix it.
func oneSlot(keys []string) error {
	first := keyslot.Slot(keys[0])
	for _, k := range keys[1:] {
		if s := keyslot.Slot(k); s != first {
			return fmt.Errorf("redlock: on a Redis Cluster node all keys of a multi-lock must hash to one slot: "+
				"%q is in slot %d and %q in slot %d; give them one hash tag, as in {tag}:a and {tag}:b", keys[0], first, k, s)
		}
	}
	return nil
}

// MaxPermits is the largest limit TryAcquirePermit and AcquirePermit accept:
// each node scans the key's permits on every acquisition.
const MaxPermits = 1 << 16

// errLimit is the error for a limit outside 1..MaxPermits.
var errLimit = errors.New("redlock: permit limit must be between 1 and MaxPermits")
