package pool_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/internal/redistest"
	"github.com/redlockgo/redlock/pool"
)

// bounded returns a context that ends with t, within 5s.
func bounded(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	t.Cleanup(cancel)
	return c
}

// scriptUsers starts a server with one ACL user per rule set, password "pw".
func scriptUsers(t *testing.T, users map[string]string) *redistest.Server {
	t.Helper()
	srv := redistest.Start(t, redistest.NoPersistence)
	admin := srv.Client(t)
	for name, rules := range users {
		args := []any{"ACL", "SETUSER", name, "on", ">pw", "~*", "&*"}
		for _, r := range strings.Fields(rules) {
			args = append(args, r)
		}
		require.NoError(t, admin.Do(bounded(t), args...).Err())
	}
	return srv
}

var scriptRules = []struct{ user, rules, missing string }{
	{"noscripts", "+@all -eval -evalsha", "EVALSHA"},
	{"noeval", "+@all -eval", "EVAL"},
	{"setget", "+set +get +info +config|get", "EVALSHA"},
	{"full", "+@all", ""},
}

// TestScriptlessUserFailsTheConnection checks FromURL's connection probe:
// a user that may not run EVAL or EVALSHA gets an error naming the command
// at its first call, which writes nothing.
func TestScriptlessUserFailsTheConnection(t *testing.T) {
	users := map[string]string{}
	for _, r := range scriptRules {
		users[r.user] = r.rules
	}
	srv := scriptUsers(t, users)
	for _, r := range scriptRules {
		t.Run(r.user, func(t *testing.T) {
			p, err := pool.FromURL(srv.URL(), pool.WithCredentials(r.user, "pw"))
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			ok, err := p.SetNX(bounded(t), "probe:"+r.user, "v", time.Minute)
			n, kerr := srv.Client(t).Exists(bounded(t), "probe:"+r.user).Result()
			require.NoError(t, kerr)
			if r.missing == "" {
				require.NoError(t, err)
				assert.True(t, ok)
				return
			}
			require.ErrorContains(t, err, "may not run "+r.missing+",")
			assert.ErrorContains(t, err, "NOPERM")
			assert.Zero(t, n, "the SET never ran")
		})
	}
}

// TestReadIdentityRefusesScriptlessUser is the same check through
// ReadIdentity, which rueidispool.FromURL uses.
func TestReadIdentityRefusesScriptlessUser(t *testing.T) {
	users := map[string]string{}
	for _, r := range scriptRules {
		users[r.user] = r.rules
	}
	srv := scriptUsers(t, users)
	for _, r := range scriptRules {
		t.Run(r.user, func(t *testing.T) {
			id, err := pool.ReadIdentity(dialRaw(t, srv.Addr()), r.user, "pw", 0)
			if r.missing == "" {
				require.NoError(t, err)
				assert.Equal(t, "noeviction", id.MaxMemoryPolicy)
				return
			}
			require.ErrorContains(t, err, "may not run "+r.missing+",")
		})
	}
}

// TestIdentityReadsMaxMemoryPolicy checks Identity.MaxMemoryPolicy, and
// that a hidden CONFIG leaves it empty.
func TestIdentityReadsMaxMemoryPolicy(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		want  string
	}{
		{"default", nil, "noeviction"},
		{"allkeys-lru", []string{"--maxmemory-policy", "allkeys-lru"}, "allkeys-lru"},
		{"CONFIG renamed away", []string{"--rename-command", "CONFIG", ""}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := redistest.StartWith(t, redistest.NoPersistence, tc.extra...)
			p, err := pool.FromURL(srv.URL())
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Close() })
			assert.Equal(t, tc.want, identify(t, p).MaxMemoryPolicy)
		})
	}
}
