package redlock

import (
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/redlockgo/redlock/clock"
	"github.com/redlockgo/redlock/internal/node"
)

// Defaults used when an option is not given.
const (
	// DefaultDriftFactor is the share of the TTL subtracted from validity for
	// clock drift between this process and the nodes; 2ms are added on top.
	DefaultDriftFactor = 0.01
	// MaxNodeTimeout caps the default per-node timeout. Calls return at the
	// majority, so a long bound does not slow them when a minority is slow;
	// a short one makes a loaded client time out, and go-redis then drops
	// the connection, which makes the next call slower still.
	MaxNodeTimeout = 500 * time.Millisecond
	// NodeTimeoutLimit is the longest node timeout any Client accepts
	// (WithNodeTimeout; the CLI's --node-timeout and --timeout). A vote
	// counts only if it answered within its call's node timeout, so no grant
	// a lock counts stays in flight longer than this, for any Client of
	// the nodes: a restarted node's return waits it out before it reads its
	// peers' lease ceilings (docs/safety.md, "A restarted node's return").
	// 5s is above the 3s the test suites need on a loaded two-core machine,
	// ten times the default cap, and no longer than the ceilings of the
	// usual TTLs, which that return waits for anyway; a node slower than it
	// is better counted as failed.
	NodeTimeoutLimit = 5 * time.Second
	// MaxTTL is the largest bound WithMaxTTL accepts: the longest TTL any
	// Client may allow. A holder that dies keeps others out for its whole
	// TTL, and a longer one is more often a unit mistake than an intent:
	// keep long work alive with WithAutoExtend.
	MaxTTL = 24 * time.Hour
	// driftConstant is added to the drift for the granularity of Redis expiry.
	driftConstant = node.DriftConstant
)

// Option configures a Client. Options are applied in order; New reports the
// first invalid one.
type Option func(*config)

type config struct {
	nodeTimeout time.Duration // 0: derived from each call's TTL
	driftFactor float64
	clock       clock.Clock
	lockOpts    []LockOption
	observers   []Observer
	loggers     []*slog.Logger // WithLogger's, for what is logged but is no Event (quarantine.go)
	quarantine  *time.Duration // nil: the default (quarantine.go)
	maxTTL      time.Duration  // 0: DefaultMaxTTL (maxttl.go)
	clockEvery  time.Duration  // 0: no clock check (clockcheck.go)
	lockDelay   time.Duration  // 0: no lock-delay (lockdelay.go)
	err         error
}

func (c *config) fail(format string, args ...any) {
	if c.err == nil {
		c.err = fmt.Errorf("redlock: "+format, args...)
	}
}

// WithNodeTimeout bounds every call to a single node (acquire, extend,
// release, status) by d: a node that has not answered within d counts as
// failed (ErrNodeTimeout), and the call decides without it. By default a
// lock's calls use min(ttl/20, 500ms), at least 1ms, so that a dead node
// cannot eat the lock's validity; Status uses MaxNodeTimeout. d must be
// positive and at most NodeTimeoutLimit (New reports it otherwise); a d
// above about a third of a TTL leaves no time to extend that lock (see
// WithAutoExtend).
//
// The node's own call runs on in the background for up to 4×d, so that a
// slow connection setup is kept rather than dialled again; a late answer
// is handled as part of the call, and Close waits for it.
func WithNodeTimeout(d time.Duration) Option {
	return func(c *config) {
		if d <= 0 {
			c.fail("node timeout must be positive, got %v", d)
			return
		}
		if d > NodeTimeoutLimit {
			c.fail("node timeout %v is above NodeTimeoutLimit (%v), the longest a counted vote may take, which a restarted node's return waits out (docs/safety.md): use at most %v; a node slower than that counts as failed", d, NodeTimeoutLimit, NodeTimeoutLimit)
			return
		}
		c.nodeTimeout = d
	}
}

// WithDriftFactor sets the share of the TTL subtracted from a lock's validity
// to allow for clock-rate differences between this process and the nodes.
// The default is DefaultDriftFactor; 2ms are always added on top. The
// shortest TTL a lock accepts is the first whole millisecond that outlasts
// this allowance: 3ms with the default.
func WithDriftFactor(f float64) Option {
	return func(c *config) {
		if f < 0 || f >= 1 || math.IsNaN(f) {
			c.fail("drift factor must be in [0, 1), got %v", f)
			return
		}
		c.driftFactor = f
	}
}

// WithDefaultLockOptions sets LockOptions applied to every Lock, TryLock and
// Do call of the Client, before the call's own options.
func WithDefaultLockOptions(opts ...LockOption) Option {
	return func(c *config) { c.lockOpts = append(c.lockOpts, opts...) }
}

// LockOption configures one Lock, TryLock or Do call.
type LockOption func(*lockConfig)

type lockConfig struct {
	retry       RetryStrategy
	heal        bool
	fencing     bool
	fair        bool
	autoExtend  bool
	extendEvery time.Duration
	maxHold     time.Duration // WithMaxHold; 0: no cap
	owner       string        // WithOwner; "": no owner (reentry.go)
	onLost      func(error)
	election    bool // the key is an election's (Campaign): keyspace.Election checked it
	// ttl is the call's TTL in whole milliseconds, as Redis keeps it: set
	// once by check, for every acquisition.
	ttl time.Duration
	err error
}

// WithRetry sets how Lock paces its retries: retry k is sent NextDelay(k)
// after the attempt before it. The default is ExponentialBackoff(25ms,
// 250ms). TryLock ignores it.
//
// A waiting Lock does not need its retries to get the lock: the release it
// waits for hands it over. Its retries (rounds, see Lock) cover a lost
// message and a holder whose lock expired without a release, so the
// strategy's bound is how long those take at most to be noticed; a waiter
// granted the key by some nodes asks the others after a quarter of the node
// timeout (at most 50ms) whatever the strategy. NoRetry makes Lock a single
// attempt, and LimitRetry(s, n) stops after n retries.
func WithRetry(s RetryStrategy) LockOption {
	return func(c *lockConfig) {
		if s == nil {
			c.err = fmt.Errorf("redlock: nil retry strategy")
			return
		}
		c.retry = s
	}
}

// WithRepairOnExtend makes a successful Extend set the key again, with our
// token, on nodes where it is missing (a node that restarted without
// persistence, or evicted it), so that such a node rejoins the lock. The
// repair happens only after a majority confirmed the extension within
// validity; repaired nodes never count toward that majority, and SET NX
// never overwrites another owner.
func WithRepairOnExtend() LockOption {
	return func(c *lockConfig) { c.heal = true }
}

// WithFairness makes Lock first-come first-served across Clients and
// processes: the caller joins the queue of waiters kept next to the key on
// every node at once, instead of trying first, so it never takes the lock
// ahead of someone who waits; TryLock takes it only if nobody waits. Without
// it, a Lock call tries once on arrival and may take a free key ahead of
// the queue (after an expiry); once it waits it is served in order too.
//
// Waiters are ordered by their arrival time on their own clocks, so the
// order is FIFO-ish across hosts whose clocks differ. A waiter that dies
// leaves the queue when its place runs out (the larger of the TTL and one
// second after its last round); one that gives up leaves at once.
func WithFairness() LockOption {
	return func(c *lockConfig) { c.fair = true }
}

// WithTimeSource is for tests: it sets the Client's own clock, the one that
// measures validity and schedules retries, extensions and waits, such as a
// *clock.Fake the test advances by hand. The default, clock.Real, is the
// one to run with. (The nodes' clocks are WithClockCheck's.)
func WithTimeSource(clk clock.Clock) Option {
	return func(c *config) {
		if clk == nil {
			c.fail("nil clock")
			return
		}
		c.clock = clk
	}
}

func (c *Client) lockConfig(opts []LockOption) (lockConfig, error) {
	lc := lockConfig{retry: defaultRetry}
	for _, o := range c.cfg.lockOpts {
		if o != nil {
			o(&lc)
		}
	}
	for _, o := range opts {
		if o != nil {
			o(&lc)
		}
	}
	return lc, lc.err
}

// nodeTimeout is the per-node bound for an operation on a lock of ttl; a
// ttl of 0 means no lock is concerned (subscriptions): the cap applies.
func (c *Client) nodeTimeout(ttl time.Duration) time.Duration {
	if c.cfg.nodeTimeout > 0 {
		return c.cfg.nodeTimeout
	}
	if ttl == 0 {
		return MaxNodeTimeout
	}
	return min(max(ttl/20, time.Millisecond), MaxNodeTimeout)
}

// drift is the validity withheld for clock drift on a lock of ttl.
func (c *Client) drift(ttl time.Duration) time.Duration {
	return driftOf(c.cfg.driftFactor, ttl)
}

func driftOf(factor float64, ttl time.Duration) time.Duration {
	return time.Duration(float64(ttl)*factor) + driftConstant
}

// minTTL is the shortest TTL, in whole milliseconds (what Redis keeps),
// that leaves some validity after the drift allowance of factor; ok is
// false when even MaxTTL does not.
func minTTL(factor float64) (ttl time.Duration, ok bool) {
	est := float64(driftConstant) / (1 - factor)
	if est >= float64(MaxTTL) {
		return 0, false
	}
	ttl = max(time.Duration(est).Truncate(time.Millisecond)-time.Millisecond, time.Millisecond)
	for ttl <= driftOf(factor, ttl) {
		ttl += time.Millisecond
	}
	return ttl, ttl <= MaxTTL
}

// checkTTL refuses a TTL outside [c.minTTL, the Client's max TTL]. It
// counts whole milliseconds, as Redis does: 2.9ms is 2ms, which the drift
// allowance would leave without validity, so that the lock could never be
// obtained.
func (c *Client) checkTTL(ttl time.Duration) error {
	if ttl.Truncate(time.Millisecond) < c.minTTL {
		return fmt.Errorf("redlock: ttl must be between %v and %v, got %v", c.minTTL, c.cfg.longest(), ttl)
	}
	return c.cfg.checkLongest(ttl)
}
