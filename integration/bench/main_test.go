package bench

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-redis logs every failed dial; the fault scenarios fail thousands
	// on purpose, and the report counts errors itself.
	redis.SetLogger(silent{})
	goleak.VerifyTestMain(m)
}

type silent struct{}

func (silent) Printf(context.Context, string, ...any) {}
