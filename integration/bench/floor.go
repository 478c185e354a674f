package bench

import (
	"context"
	"crypto/rand"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlockgo/redlock/redlock"
)

// TTL is the lock's time to live in every scenario: redsync's default
// expiry, so that redsync runs with its defaults.
const TTL = 8 * time.Second

// nodeTimeout is this library's default per-node timeout for TTL,
// min(TTL/20, MaxNodeTimeout): 400ms, which is also redsync's bound on an
// acquisition (5% of its expiry).
const nodeTimeout = min(TTL/20, redlock.MaxNodeTimeout)

// floorTimeout bounds each node call of the floor: this library's default
// for TTL, so that both give up on a silent node at the same moment.
const floorTimeout = nodeTimeout

// floorDrift is the validity the floor withholds, as the Redlock
// specification's reference code does: 1% of the TTL plus 2ms.
const floorDrift = TTL/100 + 2*time.Millisecond

// floorRelease deletes KEYS[1] only while it holds ARGV[1]; it returns the
// number of keys deleted.
var floorRelease = redis.NewScript(`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`)

var errFloorNotObtained = errors.New("floor: no majority")

// floor is the physical floor of the algorithm: the commands Redlock cannot
// do without, sent to every node in parallel with go-redis, the caller
// released as soon as a majority has answered. No retry, no wake-up, no
// observers, no error detail: what is left is the cost of the round trips
// and of go-redis itself.
type floor struct {
	clients []*redis.Client
	quorum  int
	wg      sync.WaitGroup // node calls still running after their caller returned
}

type floorLock struct {
	key, token string
}

func newFloor(clients []*redis.Client) *floor {
	return &floor{clients: clients, quorum: len(clients)/2 + 1}
}

// Lock is one attempt: SET NX PX on every node, a majority within the
// validity, or a release everywhere.
func (f *floor) Lock(ctx context.Context, key string) (any, error) {
	token := rand.Text()
	start := time.Now()
	ok := f.fan(ctx, func(ctx context.Context, c *redis.Client) bool {
		return c.SetArgs(ctx, key, token, redis.SetArgs{Mode: "NX", TTL: TTL}).Err() == nil
	})
	if ok && time.Since(start) < TTL-floorDrift {
		return &floorLock{key: key, token: token}, nil
	}
	_ = f.Unlock(ctx, &floorLock{key: key, token: token})
	return nil, errFloorNotObtained
}

// Unlock runs compare-and-delete on every node and returns at a majority.
func (f *floor) Unlock(ctx context.Context, held any) error {
	l := held.(*floorLock)
	if !f.fan(ctx, func(ctx context.Context, c *redis.Client) bool {
		n, err := floorRelease.Run(ctx, c, []string{l.key}, l.token).Int64()
		return err == nil && n == 1
	}) {
		return errFloorNotObtained
	}
	return nil
}

// fan runs op on every node, each call bounded by floorTimeout, and reports
// whether a majority said yes. It returns as soon as that is decided.
func (f *floor) fan(ctx context.Context, op func(context.Context, *redis.Client) bool) bool {
	n := len(f.clients)
	call := &fanCall{answers: make(chan bool, n)}
	call.ctx, call.cancel = context.WithTimeout(ctx, floorTimeout)
	call.running.Store(int32(n))
	f.wg.Add(n)
	for _, c := range f.clients {
		go func() {
			defer f.wg.Done()
			call.answers <- op(call.ctx, c)
			if call.running.Add(-1) == 0 {
				call.cancel() // the last call out releases the deadline's timer
			}
		}()
	}
	yes, no := 0, 0
	for yes < f.quorum && no <= n-f.quorum {
		if <-call.answers {
			yes++
		} else {
			no++
		}
	}
	return yes >= f.quorum
}

// fanCall is one fan-out: its node calls share one deadline, canceled by
// the last of them to finish, after the caller may have returned.
type fanCall struct {
	ctx     context.Context
	cancel  context.CancelFunc
	answers chan bool
	running atomic.Int32
}

// close waits for the node calls still running; the clients are the fleet's.
func (f *floor) close() error {
	f.wg.Wait()
	return nil
}
