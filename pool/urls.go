package pool

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// FromURLs returns a Pool for each of rawURLs, in the same order, made as
// [FromURL] makes them, each with opts. The URLs are all checked before any
// client is made: when one is invalid, or two name the same node, or there
// are none, FromURLs returns no Pool and an error naming the URL by its
// position (from 1), and has made nothing that would need closing.
//
// Two URLs name the same node when their hosts and ports are equal once
// written the same way (case, default port 6379, IP address forms), whatever
// their databases, users or options: two Pools on one server would break the
// majority a lock relies on. Host names are not resolved, so "localhost" and
// "127.0.0.1" are not caught. A cluster URL (redis+cluster://) names the
// nodes of all its seeds.
//
// Close each returned Pool when done.
func FromURLs(rawURLs []string, opts ...URLOption) ([]Pool, error) {
	if len(rawURLs) == 0 {
		return nil, errors.New("pool: no URLs")
	}
	all := make([]func() Pool, len(rawURLs))
	seen := make(map[string]int, len(rawURLs))
	for i, rawURL := range rawURLs {
		addrs, safe, err := parseAny(rawURL, opts, &all[i])
		if err != nil {
			if safe == "" {
				return nil, fmt.Errorf("pool: invalid URL (%d of %d): %w", i+1, len(rawURLs), err)
			}
			return nil, fmt.Errorf("pool: invalid URL %q (%d of %d): %w", safe, i+1, len(rawURLs), err)
		}
		for _, addr := range addrs {
			node := nodeKey(addr)
			if j, dup := seen[node]; dup && j != i {
				return nil, fmt.Errorf("pool: URL %q (%d of %d) names the node of URL %d, %s: one Pool per node",
					safe, i+1, len(rawURLs), j+1, addr)
			}
			seen[node] = i
		}
	}
	pools := make([]Pool, len(all))
	for i, open := range all {
		pools[i] = open()
	}
	return pools, nil
}

// parseAny parses a node's URL or a cluster URL, and returns the addresses
// it names (a cluster's seeds) and how to make its Pool.
func parseAny(rawURL string, opts []URLOption, open *func() Pool) ([]string, string, error) {
	if _, ok := clusterScheme(rawURL); ok {
		copts, safe, err := parseClusterURL(rawURL, opts)
		if err != nil {
			return nil, safe, err
		}
		*open = func() Pool { return newGoRedis(redis.NewClusterClient(copts), true) }
		return copts.Addrs, safe, nil
	}
	ropts, safe, err := parseURL(rawURL, opts)
	if err != nil {
		return nil, safe, err
	}
	*open = func() Pool { return newIdentified(ropts) }
	return []string{ropts.Addr}, safe, nil
}

// nodeKey writes the address host:port one way for each node: host names
// in lower case, IP addresses in their canonical form.
func nodeKey(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return strings.ToLower(addr)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	} else {
		host = strings.ToLower(strings.TrimSuffix(host, "."))
	}
	if n, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(n) // "06379"
	}
	return net.JoinHostPort(host, port)
}
