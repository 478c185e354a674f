package redlock_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// BenchmarkLockUnlock measures one uncontended lock+unlock on five real
// redis-server processes. Compare commits with benchstat.
func BenchmarkLockUnlock(b *testing.B) {
	_, pools := realNodes(b, 5)
	c, err := redlock.New(pools)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.TryLock(bg(), "bench", 10*time.Second)
		if err != nil {
			b.Fatal(err)
		}
		if err := l.Unlock(bg()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLockUnlockParallel measures throughput on distinct keys.
func BenchmarkLockUnlockParallel(b *testing.B) {
	_, pools := realNodes(b, 5)
	c, err := redlock.New(pools)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	var id int64
	b.RunParallel(func(pb *testing.PB) {
		key := "bench:" + strconv.FormatInt(nextID(&id), 10)
		for pb.Next() {
			l, err := c.TryLock(bg(), key, 10*time.Second)
			if err != nil {
				b.Error(err)
				return
			}
			if err := l.Unlock(bg()); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkTryLockContended measures a refused attempt (the key is held).
func BenchmarkTryLockContended(b *testing.B) {
	_, pools := realNodes(b, 5)
	c, err := redlock.New(pools)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	held, err := c.TryLock(bg(), "bench", time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	defer held.Unlock(bg())
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.TryLock(bg(), "bench", time.Hour); err == nil {
			b.Fatal("obtained a held lock")
		}
	}
}
