package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The defaults put at least 8 Clients of one worker each on 2 hot keys
// beside the ordinary team, in the safe run and in the unsafe one, whose
// roles stay with the ordinary team's first workers.
func TestTeams(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []team
	}{
		{"safe defaults", Config{}, []team{
			{clients: 5, perClient: 2, keys: []string{"chaos:0", "chaos:1", "chaos:2"}},
			{clients: 8, perClient: 1, keys: []string{"chaos:hot:0", "chaos:hot:1"}},
			{clients: 4, perClient: 1, keys: []string{"chaos:rw:0", "chaos:rw:1"}, workload: RW},
			{clients: 4, perClient: 1, keys: []string{"chaos:permit:0"}, workload: Permits},
		}},
		{"unsafe defaults", Config{Unsafe: true}, []team{
			{clients: 5, perClient: 1, keys: []string{"chaos:0", "chaos:1", "chaos:2"}},
			{clients: 8, perClient: 1, keys: []string{"chaos:hot:0", "chaos:hot:1"}},
			{clients: 4, perClient: 1, keys: []string{"chaos:rw:0", "chaos:rw:1"}, workload: RW},
			{clients: 4, perClient: 1, keys: []string{"chaos:permit:0"}, workload: Permits},
		}},
		{"one hot key", Config{HotClients: 10, HotKeys: 1, RWClients: -1, PermitClients: -1}, []team{
			{clients: 5, perClient: 2, keys: []string{"chaos:0", "chaos:1", "chaos:2"}},
			{clients: 10, perClient: 1, keys: []string{"chaos:hot:0"}},
		}},
		{"no hot team", Config{HotClients: -1, Keys: 1, RWClients: -1, PermitClients: -1}, []team{
			{clients: 5, perClient: 2, keys: []string{"chaos:0"}},
		}},
		{"clusters: every workload, the multi-locks' keys in one slot", Config{ClusterShards: 3}, []team{
			{clients: 5, perClient: 2, keys: []string{"{chaos}:0", "{chaos}:1", "{chaos}:2"}},
			{clients: 8, perClient: 1, keys: []string{"chaos:hot:0", "chaos:hot:1"}},
			{clients: 4, perClient: 1, keys: []string{"chaos:rw:0", "chaos:rw:1"}, workload: RW},
			{clients: 4, perClient: 1, keys: []string{"chaos:permit:0"}, workload: Permits},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Duration, tc.cfg.Seed, tc.cfg.Logf = time.Second, 1, t.Logf
			cfg, err := tc.cfg.withDefaults(t)
			require.NoError(t, err)
			assert.Equal(t, tc.want, cfg.teams())
		})
	}
	_, err := Config{Duration: time.Second, HotKeys: -1}.withDefaults(t)
	assert.ErrorContains(t, err, "hot key")
	_, err = Config{Duration: time.Second, PermitLimit: -1}.withDefaults(t)
	assert.ErrorContains(t, err, "permit limit")
	_, err = Config{Duration: time.Second, RWKeys: -1}.withDefaults(t)
	assert.ErrorContains(t, err, "read/write")
}

// The victim of an unsafe run holds through each amnesia round one claim
// of every workload the run plays, and every permit of the permit key.
func TestVictimClaims(t *testing.T) {
	cfg, err := Config{Duration: time.Second, Unsafe: true, Seed: 1, Logf: t.Logf}.withDefaults(t)
	require.NoError(t, err)
	assert.Equal(t, []claim{
		{workload: Exclusive, keys: []string{"chaos:0"}},
		{workload: Multi, keys: []string{"chaos:1", "chaos:2"}},
		{workload: RW, keys: []string{"chaos:rw:0"}},
		{workload: Permits, keys: []string{"chaos:permit:0"}, limit: 2},
		{workload: Permits, keys: []string{"chaos:permit:0"}, limit: 2},
	}, cfg.victimClaims())
	assert.Equal(t, []Workload{Exclusive, Multi, RW, Permits}, cfg.Workloads())
	cfg.RWClients, cfg.PermitClients, cfg.MultiEvery = 0, 0, -1
	assert.Equal(t, []claim{{workload: Exclusive, keys: []string{"chaos:0"}}}, cfg.victimClaims())
}
