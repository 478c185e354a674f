package cluster

import (
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/testcontainers/testcontainers-go"

	"github.com/redlockgo/redlock/internal/redistest"
)

// Where the local image (redis-image/build.sh) keeps libfaketime and the
// shim, and where a container sees its clock setting's directory.
const (
	imagePreload = "/usr/lib/redlock/libcmalloc.so /usr/lib/redlock/libfaketime.so.1"
	clockDir     = "/clock"
)

// fakeClock gives a container its clock setting: a file in a host directory
// mounted read-only, which the harness rewrites in one rename (so the
// directory, not the file, is mounted).
func (b *containerBackend) fakeClock(req *testcontainers.ContainerRequest) (*redistest.FakeClock, map[string]string, error) {
	dir := b.tb.TempDir()
	clock, err := redistest.NewFakeClock(filepath.Join(dir, "faketime"))
	if err != nil {
		return nil, nil, err
	}
	env := make(map[string]string)
	for _, kv := range redistest.FakeClockEnv(imagePreload, clockDir+"/faketime") {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	publish := req.HostConfigModifier
	req.HostConfigModifier = func(hc *container.HostConfig) {
		publish(hc)
		hc.Binds = append(hc.Binds, dir+":"+clockDir+":ro")
	}
	return clock, env, nil
}

func (s *containerServer) setClock(offset time.Duration, rate float64) error {
	if s.clock == nil {
		return errFakeClock
	}
	return s.clock.Set(offset, rate)
}
