package pool_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/redlockgo/redlock/pool"
)

// FromURLs makes one Pool per node, or none; it does not connect. Here the
// password comes from the environment rather than from the URLs.
func ExampleFromURLs() {
	urls := strings.Fields("redis://redis-1:6379 redis://redis-2:6379 redis://redis-3:6379")
	pools, err := pool.FromURLs(urls, pool.WithCredentials("", os.Getenv("REDIS_PASSWORD")))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer func() {
		for _, p := range pools {
			p.Close()
		}
	}()
	fmt.Println(len(pools), "nodes")
	// Output: 3 nodes
}
