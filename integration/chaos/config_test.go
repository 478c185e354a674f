package chaos

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redlockgo/redlock/integration/cluster"
	"github.com/redlockgo/redlock/redlock"
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
			{clients: 3, perClient: 1, keys: []string{"chaos:election:0"}, workload: Election},
		}},
		{"unsafe defaults", Config{Unsafe: true}, []team{
			{clients: 5, perClient: 1, keys: []string{"chaos:0", "chaos:1", "chaos:2"}},
			{clients: 8, perClient: 1, keys: []string{"chaos:hot:0", "chaos:hot:1"}},
			{clients: 4, perClient: 1, keys: []string{"chaos:rw:0", "chaos:rw:1"}, workload: RW},
			{clients: 4, perClient: 1, keys: []string{"chaos:permit:0"}, workload: Permits},
			{clients: 3, perClient: 1, keys: []string{"chaos:election:0"}, workload: Election},
		}},
		{"one hot key", Config{HotClients: 10, HotKeys: 1, RWClients: -1, PermitClients: -1, ElectionClients: -1}, []team{
			{clients: 5, perClient: 2, keys: []string{"chaos:0", "chaos:1", "chaos:2"}},
			{clients: 10, perClient: 1, keys: []string{"chaos:hot:0"}},
		}},
		{"no hot team", Config{HotClients: -1, Keys: 1, RWClients: -1, PermitClients: -1, ElectionClients: -1}, []team{
			{clients: 5, perClient: 2, keys: []string{"chaos:0"}},
		}},
		{"clusters: every workload, the multi-locks' keys in one slot", Config{ClusterShards: 3}, []team{
			{clients: 5, perClient: 2, keys: []string{"{chaos}:0", "{chaos}:1", "{chaos}:2"}},
			{clients: 8, perClient: 1, keys: []string{"chaos:hot:0", "chaos:hot:1"}},
			{clients: 4, perClient: 1, keys: []string{"chaos:rw:0", "chaos:rw:1"}, workload: RW},
			{clients: 4, perClient: 1, keys: []string{"chaos:permit:0"}, workload: Permits},
			{clients: 3, perClient: 1, keys: []string{"chaos:election:0"}, workload: Election},
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
		{workload: Election, keys: []string{"chaos:election:0"}},
	}, cfg.victimClaims())
	assert.Equal(t, []Workload{Exclusive, Multi, RW, Permits, Election}, cfg.Workloads())
	cfg.RWClients, cfg.PermitClients, cfg.ElectionClients, cfg.MultiEvery = 0, 0, 0, -1
	assert.Equal(t, []claim{{workload: Exclusive, keys: []string{"chaos:0"}}}, cfg.victimClaims())
}

// The holder of the amnesia rounds keeps a claim of every workload the run
// plays: a workload without one would meet no majority amnesia. A new
// workload fails here until victimClaims gives it a claim.
func TestVictimClaimsCoverEveryWorkload(t *testing.T) {
	for _, cfg := range []Config{{}, {Unsafe: true}, {ClusterShards: 3}, {MultiEvery: -1, RWClients: -1}, {ElectionClients: -1}} {
		cfg.Duration, cfg.Seed, cfg.Logf = time.Second, 1, t.Logf
		cfg, err := cfg.withDefaults(t)
		require.NoError(t, err)
		var got []Workload
		for _, c := range cfg.victimClaims() {
			if !slices.Contains(got, c.workload) {
				got = append(got, c.workload)
			}
		}
		assert.Equal(t, cfg.Workloads(), got)
	}
	assert.Equal(t, []Workload{Exclusive, Multi, RW, Permits, Election}, Workloads, "a new workload needs a claim in victimClaims")
}

// The safe run has the majority-amnesia round on standalone unfenced nodes,
// three of which persist nothing; its holder's TTL sets the quarantine.
func TestMajorityAmnesiaConfig(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cfg        Config
		plays      bool
		quarantine time.Duration
	}{
		{"safe", Config{}, true, 15*time.Second + 150*time.Millisecond + time.Second},
		{"fenced: every node persists", Config{Fencing: true}, false, 3*time.Second + 30*time.Millisecond + time.Second},
		{"clusters: the failover round's holder sets it", Config{ClusterShards: 3}, false, 9*time.Second + 90*time.Millisecond + time.Second},
		{"unsafe: quarantine off", Config{Unsafe: true}, false, 0},
		{"fenced, the smoke's 1s node timeout: the leaderships' 4s TTL", Config{Fencing: true, NodeTimeout: time.Second}, false,
			4*time.Second + 40*time.Millisecond + time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Duration, tc.cfg.Seed, tc.cfg.Logf = time.Second, 1, t.Logf
			cfg, err := tc.cfg.withDefaults(t)
			require.NoError(t, err)
			assert.Equal(t, tc.plays, cfg.playsMajorityAmnesia())
			assert.Equal(t, tc.quarantine, cfg.quarantine())
		})
	}
	cfg, err := Config{Duration: time.Second, Seed: 1, Logf: t.Logf}.withDefaults(t)
	require.NoError(t, err)
	assert.Equal(t, 15*time.Second, cfg.holderTTL(), "room for three restarts, the probes and the linger")
	assert.Equal(t, 3*time.Second, cfg.electionTTL())
	cfg.NodeTimeout = time.Second
	assert.Equal(t, 4*time.Second, cfg.electionTTL(), "room to auto-extend: validity above twice the node timeout plus one")
	assert.Greater(t, cfg.quarantine(), cfg.holderTTL()+cfg.holderTTL()/100+2*time.Millisecond, "the quarantine covers the holder's TTL and its drift")
}

// crew puts the safe run's holder on a Client of its own after every team,
// and the unsafe run's victim and pauser on the ordinary team's first
// workers; either holder has a prober on one more Client.
func TestCrew(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     Config
		workers int
		clients int
		holder  int
	}{
		{"safe: a holder of its own", Config{}, 5*2 + 8 + 4 + 4 + 3 + 1, 5 + 8 + 4 + 4 + 3 + 2, 29},
		{"unsafe: the first worker", Config{Unsafe: true}, 5 + 8 + 4 + 4 + 3, 5 + 8 + 4 + 4 + 3 + 1, 0},
		{"fenced: no holder", Config{Fencing: true}, 5*2 + 8 + 4 + 4 + 3, 5 + 8 + 4 + 4 + 3, -1},
		{"clusters: a holder of its own", Config{ClusterShards: 3}, 5*2 + 8 + 4 + 4 + 3 + 1, 5 + 8 + 4 + 4 + 3 + 2, 29},
		{"clusters, unsafe: the first worker", Config{ClusterShards: 3, Unsafe: true}, 5 + 8 + 4 + 4 + 3, 5 + 8 + 4 + 4 + 3 + 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Duration, tc.cfg.Seed, tc.cfg.Logf = time.Second, 1, t.Logf
			cfg, err := tc.cfg.withDefaults(t)
			require.NoError(t, err)
			clients := 0
			ws, _ := cfg.crew(func() *redlock.Client { clients++; return nil }, worker{})
			assert.Len(t, ws, tc.workers)
			assert.Equal(t, tc.clients, clients)
			for i, w := range ws {
				assert.Equal(t, i, w.id)
				if i == tc.holder {
					assert.Equal(t, victim, w.role)
					assert.Equal(t, append(cfg.sharedClaims(), cfg.ownClaims(cfg.victimClaims())...), w.victimClaims)
					assert.Equal(t, cfg.holderTTL(), w.victimTTL)
					require.NotNil(t, w.prober)
					assert.Equal(t, len(ws), w.prober.id, "the prober's holds are its own")
				} else {
					assert.NotEqual(t, victim, w.role, "worker %d", i)
				}
				assert.Equal(t, w.workload == Election, w.newClient != nil, "worker %d: only election workers kill their Client", i)
			}
			if cfg.Unsafe {
				assert.Equal(t, pauser, ws[1].role)
			}
		})
	}
}

// The holder also holds each claim on keys of its own, and the prober
// tries one of each workload there, the read/write one as a reader: a
// writer would queue, and readers are what the quarantine must refuse too.
func TestProbeClaims(t *testing.T) {
	cfg, err := Config{Duration: time.Second, Seed: 1, Logf: t.Logf}.withDefaults(t)
	require.NoError(t, err)
	own := cfg.ownClaims(cfg.victimClaims())
	assert.Equal(t, []claim{
		{workload: Exclusive, keys: []string{"chaos:amnesia:exclusive:0"}},
		{workload: Multi, keys: []string{"chaos:amnesia:multi:0", "chaos:amnesia:multi:1"}},
		{workload: RW, keys: []string{"chaos:amnesia:rw:0"}},
		{workload: Permits, keys: []string{"chaos:amnesia:permits:0"}, limit: 2},
		{workload: Permits, keys: []string{"chaos:amnesia:permits:0"}, limit: 2},
		{workload: Election, keys: []string{"chaos:amnesia:election:0"}},
	}, own)
	assert.Equal(t, []claim{
		{workload: Exclusive, keys: []string{"chaos:amnesia:exclusive:0"}},
		{workload: Multi, keys: []string{"chaos:amnesia:multi:0", "chaos:amnesia:multi:1"}},
		{workload: RW, keys: []string{"chaos:amnesia:rw:0"}, shared: true},
		{workload: Permits, keys: []string{"chaos:amnesia:permits:0"}, limit: 2},
		{workload: Election, keys: []string{"chaos:amnesia:election:0"}},
	}, probeClaims(own))
	assert.Equal(t, "chaos:0", cfg.victimClaims()[0].keys[0], "ownClaims copies the keys")
}

// On clusters the failover round breaks one shard, the ordinary keys':
// the holder's claims lie there, its own keys under their hash tag, and of
// the workers' keys only the ordinary ones.
func TestFailoverClaims(t *testing.T) {
	cfg, err := Config{Duration: time.Second, Seed: 1, Logf: t.Logf, ClusterShards: 3}.withDefaults(t)
	require.NoError(t, err)
	assert.Equal(t, []claim{
		{workload: Exclusive, keys: []string{"{chaos}:0"}},
		{workload: Multi, keys: []string{"{chaos}:1", "{chaos}:2"}},
	}, cfg.sharedClaims())
	for _, c := range cfg.ownClaims(cfg.victimClaims()) {
		for _, k := range c.keys {
			assert.Equal(t, cfg.failoverShard(), cluster.ShardOf(k, 3), "%s on the failover shard", k)
		}
	}
	assert.True(t, cfg.playsFailover())
	_, err = Config{Duration: time.Second, ClusterShards: 3, Fencing: true}.withDefaults(t)
	assert.Error(t, err, "no fenced runs on clusters")
}
