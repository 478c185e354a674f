package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// identify connects p once (a SET NX) and returns what it learned.
func identify(t *testing.T, p pool.Pool) pool.Identity {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := p.SetNX(ctx, "identify", "x", time.Second)
	require.NoError(t, err)
	id, ok := p.(pool.Identifier).Identity()
	require.True(t, ok, "a pool that has connected knows its node")
	return id
}

func TestIdentityLearnedAtConnect(t *testing.T) {
	for _, tc := range []struct {
		name  string
		p     redistest.Persistence
		extra []string
		want  pool.Persistence
		known bool
	}{
		{"no persistence", redistest.NoPersistence, nil, pool.PersistencePartial, true},
		{"everysec", redistest.AOFEverySec, nil, pool.PersistencePartial, true},
		{"always", redistest.AOFAlways, nil, pool.PersistenceAlways, true},
		{"CONFIG renamed away", redistest.AOFAlways, []string{"--rename-command", "CONFIG", ""}, pool.PersistenceUnknown, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := time.Now()
			srv := redistest.StartWith(t, tc.p, tc.extra...)
			p, err := pool.FromURL(srv.URL())
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			_, ok := p.(pool.Identifier).Identity()
			require.False(t, ok, "nothing is known before the first connection")

			id := identify(t, p)
			assert.Len(t, id.RunID, 40)
			assert.Equal(t, tc.want, id.Persistence)
			assert.True(t, id.FreshStart, "redistest declares a first start fresh")
			assert.Equal(t, tc.known, id.Err == nil, "Err: %v", id.Err)
			// The estimate errs late: never before the server started.
			assert.False(t, id.Started.Before(before), "started %v, test began %v", id.Started, before)
			assert.False(t, id.Started.After(id.Learned.Add(time.Second)))

			restarted := time.Now()
			srv.Restart(t)
			again := identify(t, p)
			assert.NotEqual(t, id.RunID, again.RunID, "a restart is a new run")
			assert.False(t, again.FreshStart, "the declaration binds one run")
			assert.False(t, again.Started.Before(restarted), "the new run looks no older than it is")
		})
	}
}

func TestIdentityWithoutInfo(t *testing.T) {
	srv := redistest.StartWith(t, redistest.NoPersistence, "--rename-command", "INFO", "")
	p, err := pool.FromURL(srv.URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	id := identify(t, p)
	assert.Empty(t, id.RunID)
	assert.True(t, id.Started.IsZero(), "uptime unknown")
	assert.False(t, id.FreshStart)
	assert.Equal(t, pool.PersistencePartial, id.Persistence)
	assert.ErrorContains(t, id.Err, "INFO server")
}

func TestIdentityOfAdaptedClient(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	p := pool.New(srv.Client(t))
	_, err := p.SetNX(context.Background(), "k", "v", time.Second)
	require.NoError(t, err)
	_, ok := p.(pool.Identifier)
	assert.False(t, ok, "New does not see the caller's connections open: it is no Identifier")
}

func TestFreshStartKeyAgreesWithRedistest(t *testing.T) {
	assert.Equal(t, pool.FreshStartKey, redistest.FreshStartKey)
}
