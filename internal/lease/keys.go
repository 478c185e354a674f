package lease

// The KEYS and the shared ARGV of every script the library runs on a
// node, named through the node's keyspace.Naming (node.Set.Names), which
// is the one place that spells a companion key: no other file names one.

// fence returns the name of key's fence counter on node i.
func (e *Env) fence(i int, key string) string { return e.Nodes.Names(i).Fence(key) }

// withHeld returns keys with key's holder marker on node i appended when
// the lock-delay is on, and keys unchanged otherwise.
func (e *Env) withHeld(keys []string, i int, key string) []string {
	if e.Delay == 0 {
		return keys
	}
	return append(keys, e.Nodes.Names(i).Held(key))
}

// withCeiling returns args with the Client's max TTL in ms and node i's
// lease ceiling appended, last, for a script that grants or extends a
// lease (scripts' ceiling.lua takes them off, raises the ceiling and
// records the max TTL); args as they are on a node that keeps none. The
// result never shares args' backing array beyond its length.
func (e *Env) withCeiling(args []any, i int) []any {
	if c := e.Nodes.Names(i).Ceiling(); c != "" {
		return append(args[:len(args):len(args)], e.MaxTTL.Milliseconds(), c)
	}
	return args
}

// withDelay returns args with the lock-delay in ms appended when it is on,
// and args unchanged otherwise.
func (e *Env) withDelay(args []any) []any {
	if e.Delay == 0 {
		return args
	}
	return append(args, e.Delay.Milliseconds())
}

// delay is the lock-delay in ms, the argument of the scripts that always
// take it ("0": none).
func (e *Env) delay() int64 { return e.Delay.Milliseconds() }

// WatchKeys returns the names of keys' watch sets on node i.
func (e *Env) WatchKeys(i int, keys []string) []string {
	n := e.Nodes.Names(i)
	out := make([]string, len(keys))
	for j, k := range keys {
		out[j] = n.Watch(k)
	}
	return out
}

// queueKeysAll returns the KEYS of ReleaseAll for the lock keys on node i:
// each key's queue keys (Naming.Queue), and under a lock-delay its holder
// marker, in order.
func (e *Env) queueKeysAll(i int, keys []string) []string {
	n := e.Nodes.Names(i)
	out := make([]string, 0, 6*len(keys))
	for _, k := range keys {
		out = append(out, n.Queue(k)...)
		if e.Delay > 0 {
			out = append(out, n.Held(k)) // release_all.lua: a sixth key per group
		}
	}
	return out
}

// QueueKeys returns the KEYS of Enqueue and Release for key on each node,
// with its holder marker under a lock-delay: built once per call, shared
// by the nodes of one naming.
func (e *Env) QueueKeys(key string) [][]string {
	out := make([][]string, e.Nodes.Len())
	for i := range out {
		if j := e.Nodes.SameNames(i); j < i {
			out[i] = out[j]
			continue
		}
		out[i] = e.withHeld(e.Nodes.Names(i).Queue(key), i, key)
	}
	return out
}

// releaseArgs appends to buf Release's arguments for token: keep is how
// long, in ms, the token may not queue again ("": it stays queued), then
// the Client's channel, the lock-delay, and "wake" for an Unlock. They
// are built once per release, for every node.
func (e *Env) releaseArgs(buf []any, token string, keep any, wake bool) []any {
	args := e.withDelay(append(buf, token, keep, e.Grants.Channel()))
	if wake {
		args = append(args, "wake") // an Unlock wakes the key's watchers (release.lua)
	}
	return args
}
