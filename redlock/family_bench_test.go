package redlock_test

import (
	"testing"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// BenchmarkRLockUnlock measures one uncontended read lock+unlock on five
// real redis-server processes, to set against BenchmarkLockUnlock.
func BenchmarkRLockUnlock(b *testing.B) {
	benchLease(b, func(c *redlock.Client) (*redlock.Lock, error) {
		return c.TryRLock(bg(), "bench", 10*time.Second)
	})
}

// BenchmarkRLockUnlockShared is BenchmarkRLockUnlock while another reader
// holds the key, so every call goes through the readers' set.
func BenchmarkRLockUnlockShared(b *testing.B) {
	benchLease(b, func(c *redlock.Client) (*redlock.Lock, error) {
		return c.TryRLock(bg(), "bench", 10*time.Second)
	}, func(c *redlock.Client) (*redlock.Lock, error) {
		return c.TryRLock(bg(), "bench", time.Minute)
	})
}

// BenchmarkPermitUnlock measures one permit taken and given back, with 7 of
// 8 permits held by others.
func BenchmarkPermitUnlock(b *testing.B) {
	take := func(c *redlock.Client) (*redlock.Lock, error) {
		return c.TryAcquirePermit(bg(), "bench", 8, time.Minute)
	}
	held := make([]func(*redlock.Client) (*redlock.Lock, error), 7)
	for i := range held {
		held[i] = take
	}
	benchLease(b, take, held...)
}

// benchLease runs take then Unlock in a loop, after taking held once each.
func benchLease(b *testing.B, take func(*redlock.Client) (*redlock.Lock, error), held ...func(*redlock.Client) (*redlock.Lock, error)) {
	_, pools := realNodes(b, 5)
	c, err := redlock.New(pools)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for _, h := range held {
		l, err := h(c)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Unlock(bg())
	}
	b.ReportAllocs()
	for b.Loop() {
		l, err := take(c)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(bg()); err != nil {
			b.Fatal(err)
		}
	}
}
