package redistls_test

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/redlockgo/redlock/internal/redistls"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestStartN(t *testing.T) {
	ca := redistls.NewCA(t)
	user := redistls.User{Name: "app", Password: "s3cret"}
	servers := redistls.StartN(t, 2, redistls.Options{CA: ca, Users: []redistls.User{user}})
	if len(servers) != 2 || servers[0].Port == servers[1].Port {
		t.Fatalf("StartN(2) gave %d servers", len(servers))
	}
	for _, s := range servers {
		for _, tc := range []struct {
			name     string
			user     string
			password string
			ok       bool
		}{
			{name: "logged in", user: user.Name, password: user.Password, ok: true},
			{name: "default user is off", ok: false},
		} {
			opts, err := redis.ParseURL(s.URL(tc.user, tc.password))
			if err != nil {
				t.Fatal(err)
			}
			if opts.TLSConfig == nil {
				t.Fatalf("%s: URL %s is not TLS", s.Addr(), s.URL("", ""))
			}
			opts.TLSConfig = ca.ClientConfig()
			opts.MaxRetries = -1
			c := redis.NewClient(opts)
			err = c.Ping(t.Context()).Err()
			_ = c.Close()
			if (err == nil) != tc.ok {
				t.Errorf("%s, %s: ping error %v; want ok=%v", s.Addr(), tc.name, err, tc.ok)
			}
		}
	}
}
