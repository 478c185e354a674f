package rueidispool_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks for leaked goroutines. A rueidis cluster client that
// refreshed its topology closes the connections it replaced 5s later, in a
// goroutine of its own that outlives Close (rueidis's, not the adapter's).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}
