package pool

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// ReadIdentity reads the identity of the Redis server at the other end of
// conn, a connection just opened on which no command has run yet, in one
// round trip over RESP2: its run, uptime, persistence and maxmemory-policy,
// FreshStartKey, and whether the user may run EVAL and EVALSHA. It sends
// AUTH first when user or password is not empty, and SELECT when db is not
// 0. It is for adapters that see each connection before their client's own
// handshake (a dial hook), as FromURL's pools do.
//
// It blocks until every reply has arrived, bounded by conn's deadline, and
// leaves nothing unread on conn. A command the server refuses leaves its
// fields unknown (Identity.Err says why); a refused AUTH or SELECT, a user
// that may not run EVAL or EVALSHA (NOPERM), a network error or a malformed
// reply is returned instead, and conn must not be used further. Errors
// never contain the password.
func ReadIdentity(conn io.ReadWriter, user, password string, db int) (Identity, error) {
	var cmds [][]string
	switch {
	case user != "":
		cmds = append(cmds, []string{"AUTH", user, password})
	case password != "":
		cmds = append(cmds, []string{"AUTH", password}) // the default user, as before Redis 6
	}
	if db != 0 {
		cmds = append(cmds, []string{"SELECT", strconv.Itoa(db)})
	}
	login := len(cmds)
	cmds = append(cmds,
		[]string{"INFO", "server"},
		[]string{"CONFIG", "GET", "appendonly"},
		[]string{"CONFIG", "GET", "appendfsync"},
		[]string{"CONFIG", "GET", "maxmemory-policy"},
		[]string{"GET", FreshStartKey})
	probes := len(cmds)
	for _, p := range scriptProbes {
		argv := make([]string, len(p.argv))
		for i, a := range p.argv {
			argv[i] = fmt.Sprint(a)
		}
		cmds = append(cmds, argv)
	}
	var b []byte
	for _, c := range cmds {
		b = appendCommand(b, c)
	}
	if _, err := conn.Write(b); err != nil {
		return Identity{}, unread{fmt.Errorf("pool: reading the server's identity: %w", err)}
	}
	vals := make([]any, len(cmds))
	errs := make([]error, len(cmds))
	r := newReader(conn)
	for i := range cmds {
		vals[i], errs[i] = r.value()
		var er errorReply
		if errs[i] != nil && !errors.As(errs[i], &er) {
			return Identity{}, unread{fmt.Errorf("pool: reading the server's identity: %w", errs[i])}
		}
	}
	now := time.Now()
	for i, err := range errs[:login] {
		if err != nil {
			return Identity{}, fmt.Errorf("pool: %s: %w", cmds[i][0], err)
		}
	}
	for i, p := range scriptProbes {
		if err := p.refused(errs[probes+i]); err != nil {
			return Identity{}, err
		}
	}
	v, e := vals[login:], errs[login:]
	var rep identityReplies
	rep.info, rep.infoErr = text(v[0], e[0])
	rep.aof, rep.aofErr = configMap(v[1], e[1])
	rep.fsync, rep.fsyncErr = configMap(v[2], e[2])
	rep.policy, rep.policyErr = configMap(v[3], e[3])
	rep.fresh, rep.freshErr = text(v[4], e[4])
	return rep.identity(now), nil
}

// unread is an error of ReadIdentity's that left replies unread on its
// connection (a network error, a malformed reply): the connection is lost.
// Any other error came after every reply was read.
type unread struct{ error }

func (u unread) Unwrap() error { return u.error }

// text is a string reply, or the error answered instead.
func text(v any, err error) (string, error) {
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%w: %T, want a string", errProtocol, v)
	}
	return s, nil
}

// configMap is the reply of CONFIG GET in RESP2, a flat array of names and
// values, as a map; or the error answered instead.
func configMap(v any, err error) (map[string]string, error) {
	if err != nil {
		return nil, err
	}
	a, ok := v.([]any)
	if !ok || len(a)%2 != 0 {
		return nil, fmt.Errorf("%w: CONFIG GET: %v", errProtocol, v)
	}
	m := make(map[string]string, len(a)/2)
	for i := 0; i < len(a); i += 2 {
		k, ok1 := a[i].(string)
		val, ok2 := a[i+1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: CONFIG GET: %v", errProtocol, v)
		}
		m[k] = val
	}
	return m, nil
}
