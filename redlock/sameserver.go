package redlock

import "slices"

// sameServers fills in each node's SameServer, by the run_ids read: nodes
// that are one server do not count, as a Client counts none of them.
func sameServers(nodes []NodeCheck) {
	byRun := make(map[string][]int, len(nodes))
	for i, n := range nodes {
		if n.RunID != "" && !n.Cluster {
			byRun[n.RunID] = append(byRun[n.RunID], i)
		}
	}
	for _, same := range byRun {
		if len(same) < 2 {
			continue
		}
		for _, i := range same {
			nodes[i].SameServer = slices.DeleteFunc(slices.Clone(same), func(j int) bool { return j == i })
			nodes[i].Counts = false
		}
	}
}
