package redlocktest

import (
	_ "embed"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2/proto"

	"github.com/redlockgo/redlock/internal/keyspace"
)

//go:embed expire.lua
var expireScript string

// Expire ends every hold on key on every node now, up or down, as if the
// holders' TTLs had run out at once: an exclusive lock, a multi-lock that
// includes key, every reader of key (TryRLock, RLock) and every permit of
// key (TryAcquirePermit, AcquirePermit), and every hold of an owner
// (redlock.WithOwner). It does not block. The holders are
// not told: a Lock kept alive (WithAutoExtend, Do) learns it at its next
// extension, which fails, so its Done closes with Err wrapping
// redlock.ErrLockLost and Do's context is canceled with a cause wrapping
// ErrLockLost. Until then the old holder still believes it holds the lock
// while another caller may take key, as after a GC pause past the TTL:
// fencing tokens (redlock.WithFencing) guard against that.
//
// What survives an expiry survives Expire: the fence counter (so the next
// holder's fence is higher), the queue of waiting callers (who find the key
// free at their next retry, as after an expiry on Redis: no release grants
// it to them), and a lock-delay marker (redlock.WithLockDelay), which is
// shortened as if its lock had expired now, so the delay starts now.
//
// As with Stop, a lock call returns at the majority, so its command to the
// last node may land after Expire and hold that node until its TTL; wait
// until the call landed everywhere (Client.Status, synctest.Wait) to expire
// a hold on every node. On each node the change is atomic (one script on a
// running node). A
// failure, which only a bug can cause, is reported with t.Errorf: Expire
// may be called from any goroutine.
func (n *Nodes) Expire(key string) {
	for i, nd := range n.nodes {
		if err := nd.expire(key); err != nil {
			n.t.Errorf("redlocktest: Expire(%q) on node %d: %v", key, i, err)
		}
	}
}

// expire ends the holds on key on this node.
func (nd *node) expire(key string) error {
	keys := []string{key, keyspace.Standalone{}.Readers(key), keyspace.Standalone{}.Held(key), keyspace.Standalone{}.Holds(key)}
	nd.mu.Lock() // no Stop or Start meanwhile
	defer nd.mu.Unlock()
	if !nd.up {
		// No command runs on a down node, so these steps are atomic too.
		expireDown(nd, keys)
		return nil
	}
	conn, err := nd.srv.Dial()
	if err != nil {
		return err
	}
	c := proto.NewClient(conn)
	defer c.Close()
	reply, err := c.Do(append([]string{"EVAL", expireScript, "4"}, keys...)...)
	if err != nil {
		return err
	}
	if strings.HasPrefix(reply, "-") {
		return fmt.Errorf("expire script: %s", strings.TrimSpace(reply[1:]))
	}
	return nil
}

// expireDown is expire.lua on a stopped node, through miniredis's own API.
func expireDown(nd *node, keys []string) {
	s := nd.srv
	left := s.TTL(keys[0])
	s.Del(keys[0])
	s.Del(keys[1])
	s.Del(keys[3])
	if left <= 0 || !s.Exists(keys[2]) {
		return
	}
	if rest := s.TTL(keys[2]); rest > left {
		s.SetTTL(keys[2], rest-left)
	} else {
		s.Del(keys[2])
	}
}
