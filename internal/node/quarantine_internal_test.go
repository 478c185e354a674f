package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redlockgo/redlock/pool"
)

// QuarantineLeft is the rule the quarantine check and redlock.CheckNodes
// share.
func TestQuarantineLeft(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const hold = time.Hour
	young := pool.Identity{RunID: "r", Started: now.Add(-10 * time.Minute), Persistence: pool.PersistencePartial}
	for _, tt := range []struct {
		name string
		id   func(pool.Identity) pool.Identity
		hold time.Duration
		want time.Duration
	}{
		{"young, not persisting", func(id pool.Identity) pool.Identity { return id }, hold, 50 * time.Minute},
		{"persistence unknown", func(id pool.Identity) pool.Identity { id.Persistence = pool.PersistenceUnknown; return id }, hold, 50 * time.Minute},
		{"persisting every write", func(id pool.Identity) pool.Identity { id.Persistence = pool.PersistenceAlways; return id }, hold, 0},
		{"declared fresh", func(id pool.Identity) pool.Identity { id.FreshStart = true; return id }, hold, 0},
		{"uptime unknown", func(id pool.Identity) pool.Identity { id.Started = time.Time{}; return id }, hold, 0},
		{"old enough", func(id pool.Identity) pool.Identity { id.Started = now.Add(-hold); return id }, hold, 0},
		{"quarantine off, started a second ahead", func(id pool.Identity) pool.Identity { id.Started = now.Add(time.Second); return id }, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, QuarantineLeft(tt.id(young), tt.hold, now))
		})
	}
}
