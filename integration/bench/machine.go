package bench

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/redlockgo/redlock/integration/cluster"
)

// Machine describes where a run took place.
type Machine struct {
	Date    string
	CPUs    int
	CPU     string // model name from /proc/cpuinfo
	Kernel  string
	Go      string
	Redis   string
	Backend cluster.Backend
	Load    string // /proc/loadavg at the start: other work on the machine
}

func describeMachine(c *cluster.Cluster) Machine {
	m := Machine{
		Date:    time.Now().UTC().Format("2006-01-02 15:04 MST"),
		CPUs:    runtime.NumCPU(),
		CPU:     cpuModel(),
		Kernel:  strings.TrimSpace(readFile("/proc/sys/kernel/osrelease")),
		Go:      runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		Backend: c.Backend(),
		Redis:   "unknown",
	}
	if f := strings.Fields(readFile("/proc/loadavg")); len(f) >= 3 {
		m.Load = strings.Join(f[:3], " ")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if info, err := c.Node(0).Client().Info(ctx, "server").Result(); err == nil {
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok {
				m.Redis = v
			}
		}
	}
	return m
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}
