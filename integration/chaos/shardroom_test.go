package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestShardRoomKeepsAMajorityOfEveryShard(t *testing.T) {
	now := time.Unix(1000, 0)
	var r shardRoom
	assert.True(t, r.take(shardOut{cluster: 0, shard: 1}, nil, now), "an empty room")
	assert.False(t, r.take(shardOut{cluster: 1, shard: 1}, nil, now), "shard 1 is out on cluster 0")
	assert.False(t, r.take(shardOut{cluster: 0, shard: 1}, nil, now), "a fault where one lasts adds nothing")
	assert.True(t, r.take(shardOut{cluster: 1, shard: 2}, nil, now), "another shard")
	drawn := []shardFault{{node: 2, shard: 0}}
	assert.False(t, r.take(shardOut{cluster: 0, shard: 0}, drawn, now), "shard 0 is drawn for cluster 2 in the same round")

	// A killed master is back, and quarantined for 10s more.
	r.back(shardOut{cluster: 0, shard: 1}, now.Add(10*time.Second))
	assert.False(t, r.take(shardOut{cluster: 2, shard: 1}, nil, now.Add(9*time.Second)), "still quarantined")
	assert.True(t, r.take(shardOut{cluster: 2, shard: 1}, nil, now.Add(10*time.Second)), "the quarantine is over")
	r.back(shardOut{cluster: 2, shard: 1}, now.Add(11*time.Second)) // a pause, over at 11s

	// The failover round takes two clusters out at once, room or not.
	r.hold(shardOut{cluster: 0, shard: 0})
	r.hold(shardOut{cluster: 1, shard: 0})
	assert.False(t, r.clearFor(0, 0, now.Add(time.Hour)), "out until the round's shards are back")
	r.back(shardOut{cluster: 0, shard: 0}, now.Add(20*time.Second))
	r.back(shardOut{cluster: 1, shard: 0}, now.Add(20*time.Second))
	assert.False(t, r.clearFor(0, 5*time.Second, now.Add(24*time.Second)), "back less than 5s ago")
	assert.True(t, r.clearFor(0, 5*time.Second, now.Add(25*time.Second)))
	assert.False(t, r.clearFor(1, 0, now.Add(10*time.Second)), "cluster 2's pause of shard 1 lasts until 11s")
	assert.True(t, r.clearFor(1, 0, now.Add(11*time.Second)))
}
