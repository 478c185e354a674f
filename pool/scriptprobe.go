package pool

import (
	"fmt"
	"strings"
)

// A lock needs its user to run scripts. SET NX, which takes a plain lock,
// is one command, but every release, extension, fence, queue and status is
// a script (EVALSHA, and EVAL when the server's script cache is empty): a
// user whose ACL allows SET but not EVAL or EVALSHA would be granted locks
// that it can never release or extend, their keys left until their TTL.
//
// The pools that see their connections open (FromURL, FromURLs) check it
// there, in the round trip that reads the server's identity, and fail the
// connection when the server refuses a script command for lack of
// permission (NOPERM): the caller's command never runs, so no key is
// written, and its error names the missing permission. The check costs two
// small commands per new connection, none per lock; ACL DRYRUN, the other
// way to ask, needs Redis 7 and a permission of its own that a restricted
// user lacks, while a refused probe answers NOPERM on every version with
// ACLs.

// scriptProbe is one command that tells whether the user may run a script
// command: the ACL is checked before the command runs, so NOPERM means the
// user may not, and any other answer (NOSCRIPT included) that it may.
type scriptProbe struct {
	command string // as the ACL names it
	argv    []any
}

// scriptProbes are the probes of EVALSHA and EVAL. EVALSHA names a script
// no one loads (NOSCRIPT, unless it was), EVAL runs one that returns at
// once and touches no key.
var scriptProbes = [...]scriptProbe{
	{"evalsha", []any{"EVALSHA", probeSHA, 0}},
	{"eval", []any{"EVAL", probeScript, 0}},
}

const (
	probeScript = "return 0"
	probeSHA    = "e6b7ab66ff2f3fdd0a9a1e2e9e6ac3e0a00f6f07" // not that script's: any well-formed SHA1 serves
)

// args returns the probe's command.
func (p scriptProbe) args() []any { return p.argv }

// refused returns the error that fails the connection when err, the
// probe's answer, says the user may not run the probe's command; nil
// otherwise. go-redis hands the caller the error of OnConnect unwrapped
// once: the outer layer is for it, so that the message that names the
// command is what the caller sees.
func (p scriptProbe) refused(err error) error {
	if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		return nil
	}
	named := fmt.Errorf("pool: the connection's ACL user may not run %s, which every release and extension of a lock needs (grant +eval +evalsha, or +@scripting): %w",
		strings.ToUpper(p.command), err)
	return fmt.Errorf("%w", named)
}
