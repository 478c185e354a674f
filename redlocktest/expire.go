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
// holders' TTLs had run out at once: a lock, a multi-lock that includes
// key, every reader and permit of key, every hold of an owner. It does not
// block, and the holders are not told: a Lock kept alive learns it at its
// next extension (Done closes, Err wraps redlock.ErrLockLost). What
// survives an expiry survives Expire: the fence counter, the queue of
// waiters (who find the key free at their next retry), and a lock-delay
// marker, whose delay starts now.
//
// A lock call returns at the majority, so its command to the last node may
// land after Expire; wait until it landed everywhere (Client.Status,
// synctest.Wait) first. On each node the change is atomic. A failure is
// reported with t.Errorf; Expire may be called from any goroutine.
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
	nd.tick()
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
