package conformance

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/internal/redistls"
	"github.com/redlockgo/redlock/pool"
)

// testIdentity checks what the lock's restart quarantine needs of a Pool:
// it tells its node's identity (pool.Identifier), learned on each new
// connection before a command of the caller's runs there, so that after
// the node restarts without its data the first answer from the new run
// arrives with the new run's identity already known. A Pool that is no
// Identifier fails: the quarantine would skip its node without a word.
func (s *suite) testIdentity(t *testing.T) {
	t.Run("Restart", s.testIdentityRestart)
	t.Run("Login", func(t *testing.T) {
		ca := redistls.NewCA(t)
		srv := redistls.Start(t, redistls.Options{CA: ca, Users: []redistls.User{{Name: user, Password: Secret}}})
		id := s.identify(t, srv.URL(user, Secret), ca.ClientConfig())
		assert.Len(t, id.RunID, 40, "INFO server read after the login")
		assert.Equal(t, pool.PersistencePartial, id.Persistence)
		assert.True(t, id.FreshStart, "the declaration is read after the login")
		assert.NoError(t, id.Err)
	})
	t.Run("Database", func(t *testing.T) {
		// The fresh-start key is read in the database the connection uses.
		srv := redistest.Start(t, redistest.NoPersistence) // declared fresh in db 0
		id := s.identify(t, srv.URL()+"/3", nil)
		assert.False(t, id.FreshStart, "db 3 holds no declaration")
		rc := redis.NewClient(&redis.Options{Addr: srv.Addr(), DB: 3})
		t.Cleanup(func() { _ = rc.Close() })
		require.NoError(t, rc.Set(ctx(t), pool.FreshStartKey, id.RunID, 0).Err())
		again := s.identify(t, srv.URL()+"/3", nil)
		assert.True(t, again.FreshStart, "a new connection reads db 3's declaration")
	})
	t.Run("ConfigHidden", func(t *testing.T) {
		srv := redistest.StartWith(t, redistest.AOFAlways, "--rename-command", "CONFIG", "")
		id := s.identify(t, srv.URL(), nil)
		assert.Len(t, id.RunID, 40)
		assert.False(t, id.Started.IsZero())
		assert.Equal(t, pool.PersistenceUnknown, id.Persistence, "a refused CONFIG leaves persistence unknown")
		assert.ErrorContains(t, id.Err, "CONFIG GET")
	})
}

// identify opens a Pool for rawURL, runs one command, and returns the
// identity known when its answer arrived.
func (s *suite) identify(t *testing.T, rawURL string, cfg *tls.Config) pool.Identity {
	t.Helper()
	p := s.open(t, rawURL, cfg)
	idr := identifier(t, p)
	_, err := p.SetNX(ctx(t), "id:probe", "v", time.Minute)
	require.NoError(t, err)
	id, ok := idr.Identity()
	require.True(t, ok, "a Pool that answered knows its node")
	return id
}

// identifier returns p as a pool.Identifier, or fails t.
func identifier(t *testing.T, p pool.Pool) pool.Identifier {
	t.Helper()
	idr, ok := p.(pool.Identifier)
	require.True(t, ok, "%T is not a pool.Identifier: the restart quarantine would skip its node", p)
	return idr
}

func (s *suite) testIdentityRestart(t *testing.T) {
	begin := time.Now()
	srv := redistest.Start(t, redistest.NoPersistence)
	p := s.open(t, srv.URL(), nil)
	idr := identifier(t, p)
	_, known := idr.Identity()
	require.False(t, known, "nothing is known before the first connection")
	c := ctx(t)

	ok, err := p.SetNX(c, "id:before", "v", time.Minute)
	require.NoError(t, err)
	require.True(t, ok)
	first, known := idr.Identity()
	require.True(t, known, "learned by the time the first answer arrived")
	assert.Len(t, first.RunID, 40)
	assert.Equal(t, pool.PersistencePartial, first.Persistence)
	assert.True(t, first.FreshStart, "redistest declares a first start fresh")
	assert.NoError(t, first.Err)
	assert.False(t, first.Started.Before(begin), "the estimate errs young: started %v, test began %v", first.Started, begin)
	assert.False(t, first.Started.After(first.Learned.Add(time.Second)))

	restarted := time.Now()
	srv.Restart(t)
	// A call may fail on a connection the restart broke. The first that
	// answers answers from the new run, which must be known by then.
	var again pool.Identity
	require.Eventually(t, func() bool {
		ok, err := p.SetNX(c, "id:after", "v", time.Minute)
		if err != nil {
			return false
		}
		assert.True(t, ok, "the new run has no key yet")
		again, known = idr.Identity()
		return true
	}, 10*time.Second, 10*time.Millisecond)
	require.True(t, known)
	assert.NotEqual(t, first.RunID, again.RunID, "the answer came from a new run")
	assert.False(t, again.Started.Before(restarted), "the new run looks no older than it is: started %v, restarted %v",
		again.Started, restarted)
	assert.False(t, again.FreshStart, "the declaration bound the first run")
	assert.Equal(t, pool.PersistencePartial, again.Persistence)
	n, err := srv.Client(t).Exists(c, "id:before").Result()
	require.NoError(t, err)
	assert.Zero(t, n, "the restart lost the first run's key")
}
