package redlock_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/redlock"
)

// A Client's own leftovers from a refused attempt never read as
// contention: an attempt refused while two of three nodes were still
// working on its take (their SETs land after the decision) is followed at
// once by another, on the now free key; the second finds no trace of the
// first. On dd8673a the first attempt's cleanup was entered only once those
// nodes answered, after the second attempt's SETs, which found the first
// attempt's token and reported "held by another owner".
func TestOwnLeftoversAreNotContention(t *testing.T) {
	fn := newFakeNodes(t, 3)
	c := newClient(t, fn.pools)
	require.NoError(t, fn.servers[0].Set("job", "someone-else"))
	fn.servers[0].SetTTL("job", 10*time.Second)
	open1, open2 := fn.faults[1].Hold(), fn.faults[2].Hold()
	defer open1()
	defer open2()

	_, err := c.TryLock(bg(), "job", 5*time.Second)
	require.ErrorIs(t, err, redlock.ErrNotObtained, "node 0 is held and nodes 1 and 2 have not answered")
	fn.servers[0].Del("job") // the other owner leaves

	var once sync.Once
	sent := make(chan struct{})
	fn.faults[0].Before(func(string) { once.Do(func() { close(sent) }) })
	second := make(chan error, 1)
	go func() {
		l, err := c.TryLock(bg(), "job", 5*time.Second)
		if err == nil {
			err = l.Unlock(bg())
		}
		second <- err
	}()
	<-sent // the second attempt has taken its places on every node
	open1()
	open2() // the first attempt's SETs land now, then its cleanup, then the second's SETs
	require.NoError(t, <-second, "the second attempt must find the key free on every node")
}
