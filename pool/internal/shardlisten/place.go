package shardlisten

import (
	"context"
	"strings"
	"time"
)

// run probes for sharded pub/sub, then keeps every sharded channel
// subscribed on the master that owns its slot, until Close. It passes
// again every PlaceEvery while a pass leaves a channel unconfirmed, and
// otherwise only when poked.
func (s *Set[S]) run() {
	defer close(s.placed)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-s.kick:
		case <-t.C:
		}
		if settled := s.probe() && s.pass(); !settled {
			t.Reset(PlaceEvery)
		}
	}
}

// probe asks the cluster, once it can, whether it knows SSUBSCRIBE. It
// reports whether the answer is known.
func (s *Set[S]) probe() bool {
	s.mu.Lock()
	done := s.probed
	s.mu.Unlock()
	if done {
		return true
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.StepBound())
	defer cancel()
	sharded, known := s.cfg.Probe(ctx)
	if !known {
		return false // asked again at the next pass
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.probed = true
	s.sharded = sharded
	return true
}

// pass places each sharded channel that its shard has not confirmed, and
// closes the shard connections left without channels. It reports whether
// every channel is confirmed.
func (s *Set[S]) pass() bool {
	s.mu.Lock()
	var pending []string
	for ch, addr := range s.wanted {
		// Not confirmed: the subscription is on its way, or its shard
		// refused it (MOVED) or dropped it (the slot moved).
		if sh, ok := s.shards[addr]; !ok || !sh.Subscribed(ch) {
			pending = append(pending, ch)
		}
	}
	s.mu.Unlock()
	settled := s.cfg.Place(s.ctx, pending)
	s.prune()
	return settled
}

// Claim records addr as the shard of channel and returns the connection
// to that shard, opened if need be, and true. With an empty addr (the
// owner is not known) it records nothing and returns no connection. It
// returns false when channel is not to be placed: unsubscribed, the Set
// closing, or sharded pub/sub found off (heard on plain channels now).
func (s *Set[S]) Claim(channel, addr string) (S, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var none S
	if _, ok := s.wanted[channel]; !ok || s.closing || !s.sharded {
		return none, false
	}
	if addr == "" {
		return none, true
	}
	s.wanted[channel] = addr
	sh, ok := s.shards[addr]
	if !ok {
		sh = s.cfg.NewShard(addr)
		s.shards[addr] = sh
	}
	return sh, true
}

// UnknownCommand reports whether reply, a shard's refusal, says it does
// not know the command.
func UnknownCommand(reply string) bool {
	return strings.Contains(strings.ToLower(reply), "unknown command")
}

// Refused is told by a shard of a refused command (its reply) or a
// dropped channel (""). A shard that does not know SSUBSCRIBE turns
// sharded off, for good: new waiters use plain channels. Either way it
// asks for a pass.
func (s *Set[S]) Refused(reply string) {
	if UnknownCommand(reply) {
		s.mu.Lock()
		s.sharded = false
		s.mu.Unlock()
	}
	s.Poke()
}

// extra is a shard and the channels it has that are not wanted there.
type extra[S Shard] struct {
	shard    S
	channels []string
}

// prune unsubscribes each shard from the channels not wanted there (any
// more), and closes the shards left without channels.
func (s *Set[S]) prune() {
	s.mu.Lock()
	bound := s.bound
	var extras []extra[S]
	var idle []S
	for addr, sh := range s.shards {
		var n int
		var chs []string
		for _, ch := range sh.Wants() {
			if s.wanted[ch] == addr {
				n++
			} else {
				chs = append(chs, ch)
			}
		}
		switch {
		case n == 0:
			idle = append(idle, sh)
			delete(s.shards, addr)
		case len(chs) > 0:
			extras = append(extras, extra[S]{shard: sh, channels: chs})
		}
	}
	s.mu.Unlock()
	if s.cfg.WriteTimeout > 0 {
		bound = min(bound, s.cfg.WriteTimeout)
	}
	for _, e := range extras {
		ctx, cancel := context.WithTimeout(s.ctx, bound)
		_ = e.shard.Unsubscribe(ctx, e.channels...)
		cancel()
	}
	for _, sh := range idle {
		_ = sh.Close()
	}
}
