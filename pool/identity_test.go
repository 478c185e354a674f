package pool_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/keyspace"
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

// TestNewReadsIdentityOnEachConnection: New over a *redis.Client of the
// caller's that has not been used tells what FromURL's Pool tells, read by
// a dial hook before the client's handshake; a restart's new run is known
// before the first answer on it.
func TestNewReadsIdentityOnEachConnection(t *testing.T) {
	srv := redistest.Start(t, redistest.AOFAlways)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), MaxRetries: -1})
	t.Cleanup(func() { _ = rc.Close() })
	p := pool.New(rc)
	_, ok := p.(pool.Identifier).Identity()
	require.False(t, ok, "nothing is known before the first connection")

	id := identify(t, p)
	assert.Len(t, id.RunID, 40)
	assert.Equal(t, pool.PersistenceAlways, id.Persistence, "CONFIG is read, as FromURL reads it")
	assert.True(t, id.FreshStart)
	assert.Equal(t, id, identify(t, pool.New(rc)), "a client given twice carries one hook")

	srv.Restart(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for rc.Ping(ctx).Err() != nil { // the old connection breaks; the next one is read
		require.NoError(t, ctx.Err())
	}
	again, ok := p.(pool.Identifier).Identity()
	require.True(t, ok)
	assert.NotEqual(t, id.RunID, again.RunID, "a restart is a new run")
	assert.Equal(t, "PONG", rc.Ping(ctx).Val(), "the caller's client works as before")
}

// TestNewOverAUsedClientTellsOnceSettled: a client that had connections
// before New may have one dialled before the hook, so New tells nothing
// until a connection read after the client's DialTimeout; until then the
// lock reads the identity through its scripts.
func TestNewOverAUsedClientTellsOnceSettled(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), DialTimeout: 100 * time.Millisecond, PoolSize: 2})
	t.Cleanup(func() { _ = rc.Close() })
	ctx := context.Background()
	require.NoError(t, rc.Ping(ctx).Err())
	p := pool.New(rc)
	before := rc.Conn() // holds the connection opened before New
	require.NoError(t, before.Ping(ctx).Err())
	_, err := p.SetNX(ctx, "k", "v", time.Second) // on a new connection, read by the hook
	require.NoError(t, err)
	_, ok := p.(pool.Identifier).Identity()
	require.False(t, ok, "read before the DialTimeout: a dial begun before New may still be under way")
	require.NoError(t, before.Close())

	time.Sleep(150 * time.Millisecond) // past the DialTimeout: every dial begun before New has ended
	_, ok = p.(pool.Identifier).Identity()
	require.False(t, ok, "no connection was read since")
	require.NoError(t, srv.Client(t).ClientKillByFilter(ctx, "TYPE", "normal").Err())
	for rc.Ping(ctx).Err() != nil { // the pool redials, through the hook
	}
	id, ok := p.(pool.Identifier).Identity()
	require.True(t, ok, "a connection read after the DialTimeout settles it")
	assert.Len(t, id.RunID, 40)
}

// TestNewNeverFailsTheCallersClient: a connection the hook cannot read (a
// user whose ACL now refuses scripts: the probes are refused) still goes
// to the caller's client, whose commands keep working; New tells nothing
// from then on, so the lock reads through its scripts, which the server
// refuses to that user.
func TestNewNeverFailsTheCallersClient(t *testing.T) {
	srv := redistest.Start(t, redistest.NoPersistence)
	ctx := context.Background()
	admin := srv.Client(t)
	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "+@all").Err())
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), Username: "app", Password: "pw"})
	t.Cleanup(func() { _ = rc.Close() })
	p := pool.New(rc)
	identify(t, p)

	require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "-eval", "-evalsha").Err())
	require.NoError(t, admin.ClientKillByFilter(ctx, "USER", "app").Err())
	require.NoError(t, rc.Set(ctx, "k", "v", time.Minute).Err())
	assert.Equal(t, "v", rc.Get(ctx, "k").Val())
	_, ok := p.(pool.Identifier).Identity()
	assert.False(t, ok, "a connection whose identity was not read makes New tell nothing")
}

func TestFreshStartKeyAgreesWithRedistest(t *testing.T) {
	assert.Equal(t, pool.FreshStartKey, redistest.FreshStartKey)
	assert.Equal(t, keyspace.FreshStart, pool.FreshStartKey, "the library's one list of names and the Pool's constant")
}
