package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/redlockgo/redlock/redlock"
)

// Why nodes do not count, beyond the key's holder: the hint every command
// prints with exit 69, and the credential errors it names.

// checkHint is the line that follows an exit 69 when nodes answered but
// do not count for their health, or did not answer: where to look next.
const checkHint = "run `redlock nodes check` to see which nodes do not count, and why"

// loginErrors are the replies of a server that refused the URL's
// credentials: no password given (NOAUTH), a wrong user or password
// (WRONGPASS), or a user not allowed the lock's commands (NOPERM).
var loginErrors = []string{"NOAUTH", "WRONGPASS", "NOPERM"}

// loginRefused returns the credential error err carries ("WRONGPASS"),
// or "" when it carries none.
func loginRefused(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	for _, code := range loginErrors {
		if strings.HasPrefix(msg, code+" ") || strings.Contains(msg, ": "+code+" ") {
			return code
		}
	}
	return ""
}

// loginHint says what to do about credentials refused with code.
func loginHint(code string) string {
	what := "refused the credentials"
	switch code {
	case "NOAUTH":
		what = "require a password the URLs do not give"
	case "WRONGPASS":
		what = "refused the URLs' user or password"
	case "NOPERM":
		what = "do not allow the URLs' user the lock's commands (EVAL, EVALSHA, SET, GET, INFO)"
	}
	return fmt.Sprintf("the nodes %s (%s): give each node's user and password in its URL, redis://user:password@host:port", what, code)
}

// loginCode returns the credential error of the first of errs that has one.
func loginCode(errs ...error) string {
	for _, err := range errs {
		if code := loginRefused(err); code != "" {
			return code
		}
	}
	return ""
}

// nodeErrors returns the per-node causes err reports (its *QuorumError's
// nodes), or err itself.
func nodeErrors(err error) []error {
	var qe *redlock.QuorumError
	if !errors.As(err, &qe) {
		return []error{err}
	}
	out := make([]error, len(qe.Nodes))
	for i, n := range qe.Nodes {
		out[i] = n.Err
	}
	return out
}

// unavailableHint prints, on stderr after the command's own line, the hint
// of an exit 69: credentials when a node refused them, redlock nodes check
// otherwise. cmd is "redlock run", "redlock status", ...
func unavailableHint(stderr io.Writer, cmd string, errs ...error) {
	if code := loginCode(errs...); code != "" {
		fmt.Fprintf(stderr, "%s: %s\n", cmd, loginHint(code))
		return
	}
	fmt.Fprintf(stderr, "%s: %s\n", cmd, checkHint)
}
