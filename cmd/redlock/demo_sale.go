package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// The shop: a counter of tickets left and a list of the seats sold, on one
// Redis node of its own.
const (
	counterKey = "demo:tickets-left"
	salesKey   = "demo:seats-sold"
)

// salePause is the time between reading the counter and writing it back, as
// a real sale would spend taking a payment. It widens the race the lock
// closes; the demo stays fast.
const salePause = time.Millisecond

// guard runs one sale, with or without a lock around it.
type guard func(ctx context.Context, sale func(ctx context.Context) error) error

// sale is one run of the ticket sale: its settings and, after run, its result.
type sale struct {
	shop     *redis.Client
	workers  int
	tickets  int
	out      *printer
	guard    guard
	halfway  func() // called once, inside a sale, when half the tickets are sold
	halfOnce sync.Once

	mu    sync.Mutex
	shown int // the lowest counter value reported so far

	// Results.
	sales   int // sales recorded
	seats   int // distinct seats among them
	most    int // the most sales of one seat
	left    int // the counter at the end
	elapsed time.Duration
	err     error
}

// run resets the shop and lets the workers sell until each reads the counter
// at zero. A runaway (more than ten times the tickets) stops the sale.
func (s *sale) run(ctx context.Context) {
	if err := s.shop.Set(ctx, counterKey, s.tickets, 0).Err(); err != nil {
		s.err = fmt.Errorf("reset the shop: %w", err)
		return
	}
	if err := s.shop.Del(ctx, salesKey).Err(); err != nil {
		s.err = fmt.Errorf("reset the shop: %w", err)
		return
	}
	s.shown = s.tickets
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	start := time.Now()
	var wg sync.WaitGroup
	for range s.workers {
		wg.Go(func() {
			if err := s.work(ctx); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	s.elapsed = time.Since(start)
	if err := context.Cause(ctx); err != nil {
		s.err = err
		return
	}
	s.count(ctx)
}

// work is one worker: sale after sale until sold out.
func (s *sale) work(ctx context.Context) error {
	for {
		soldOut := false
		err := s.guard(ctx, func(ctx context.Context) error {
			var err error
			soldOut, err = s.sellOne(ctx)
			return err
		})
		if err != nil || soldOut {
			return err
		}
	}
}

// sellOne is the read-modify-write the lock must protect: GET the tickets
// left, pause, SET one fewer, record the seat sold (numbered by the count
// read). It reports soldOut when no ticket is left.
func (s *sale) sellOne(ctx context.Context) (soldOut bool, err error) {
	left, err := s.shop.Get(ctx, counterKey).Int()
	if err != nil {
		return false, fmt.Errorf("read the counter: %w", err)
	}
	if left <= 0 {
		return true, nil
	}
	select {
	case <-time.After(salePause):
	case <-ctx.Done():
		return false, context.Cause(ctx)
	}
	if err := s.shop.Set(ctx, counterKey, left-1, 0).Err(); err != nil {
		return false, fmt.Errorf("write the counter: %w", err)
	}
	n, err := s.shop.RPush(ctx, salesKey, left).Result()
	if err != nil {
		return false, fmt.Errorf("record the sale: %w", err)
	}
	s.progress(left-1, n)
	if n == int64(s.tickets/2) && s.halfway != nil {
		s.halfOnce.Do(s.halfway)
	}
	if n >= int64(10*s.tickets) {
		return true, nil // runaway: enough shown
	}
	return false, nil
}

// progress prints a line each time the counter first reaches a multiple
// of a quarter of the tickets.
func (s *sale) progress(left int, sales int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if left%max(s.tickets/4, 1) != 0 || left >= s.shown {
		return
	}
	s.shown = left
	s.out.printf("   counter at %4d: %4d tickets gone, %4d sales recorded\n", left, s.tickets-left, sales)
}

// count reads the result of the sale from the shop.
func (s *sale) count(ctx context.Context) {
	seats, err := s.shop.LRange(ctx, salesKey, 0, -1).Result()
	if err != nil {
		s.err = fmt.Errorf("read the sales: %w", err)
		return
	}
	left, err := s.shop.Get(ctx, counterKey).Int()
	if err != nil {
		s.err = fmt.Errorf("read the counter: %w", err)
		return
	}
	perSeat := map[string]int{}
	for _, seat := range seats {
		perSeat[seat]++
		s.most = max(s.most, perSeat[seat])
	}
	s.sales, s.seats, s.left = len(seats), len(perSeat), left
}

// exact reports whether every ticket was sold once and no more.
func (s *sale) exact() bool {
	return s.err == nil && s.sales == s.tickets && s.seats == s.tickets && s.left == 0
}

// oversold is how many more sales were recorded than there were tickets.
func (s *sale) oversold() int { return max(s.sales-s.tickets, 0) }

// counted is how many sales the counter shows: the tickets it went down by.
func (s *sale) counted() int { return s.tickets - s.left }

// printer serialises the workers' progress lines.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// errSaleTimeout ends a demo that takes far longer than it should.
var errSaleTimeout = errors.New("the demo took over a minute")
