package main

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The command of redlock run that resumes its lock from REDLOCK_TOKEN with
// a shorter TTL does not shorten the hold redlock run counts on (on
// cfb0d9a, Resume(key, token, 1s) set the run's 30s keys to 1s, and
// another Client took the key with 28s of the run's validity left).
func TestRunResumedWithAShorterTTLKeepsTheRunsLease(t *testing.T) {
	t.Parallel()
	nodes := startNodes(t, 3)
	key := keyFor(t)
	const ttl = 30 * time.Second
	// The run's Until is at most its start plus the TTL less the drift
	// allowance (1% + 2ms): the nodes must keep the key at least that long.
	runsUntil := time.Now().Add(ttl - ttl/100 - 2*time.Millisecond)
	p := start(t, "", nil, "run", "--nodes", nodes.urls, "--key", key, "--ttl", ttl.String(), "--",
		"sh", "-c", `echo "token=$REDLOCK_TOKEN"; exec sleep 60`)
	p.waitOutput(t, "token=")
	token := strings.TrimSpace(strings.SplitN(p.stdout.String(), "token=", 2)[1])

	c := nodes.client(t)
	_, err := c.Resume(context.Background(), key, token, time.Second)
	require.NoError(t, err)
	// run starts the command once a majority granted the lock: a node
	// whose grant has not landed holds nothing yet (PTTL -2), and vouches
	// for nothing either.
	holding := 0
	for _, s := range nodes.servers {
		left := time.Until(runsUntil) // before the TTL, which counts from later
		pttl, err := s.Client(t).PTTL(context.Background(), key).Result()
		require.NoError(t, err)
		if pttl == -2 {
			continue
		}
		holding++
		assert.GreaterOrEqual(t, pttl, left, "the key's TTL on %s against the run's validity", s.Addr())
	}
	require.GreaterOrEqual(t, holding, 2, "the key is held on a majority")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	require.Equal(t, 128+int(syscall.SIGTERM), p.wait(t), "stderr: %s", p.stderr)
	nodes.requireFree(t, key)
}
