package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// newFlagSet returns a FlagSet for a subcommand that prints nothing itself:
// parseFlags reports errors in one line and prints help on stdout.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("redlock "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args into fs, the flags of the subcommand cmd. It returns
// ok false with the exit code when the command must stop: exitOK after -h or
// --help (usage printed on stdout), exitUsage after an error (one line and a
// hint printed on stderr).
func parseFlags(fs *flag.FlagSet, cmd, usage string, args []string, stdout, stderr io.Writer) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK, false
	default:
		return usageError(stderr, cmd, "%s", flagMessage(err)), false
	}
}

// flagMessage rewrites the flag package's errors in the double-dash
// spelling the usage texts use: "unknown flag --bogus", `bad --ttl "3": ...`.
func flagMessage(err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag --" + strings.TrimPrefix(name, "-")
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "--" + strings.TrimPrefix(name, "-") + " needs a value"
	}
	// invalid value "V" for flag -NAME: CAUSE
	if rest, ok := strings.CutPrefix(msg, "invalid value "); ok {
		if i := strings.LastIndex(rest, " for flag -"); i >= 0 {
			value, tail := rest[:i], rest[i+len(" for flag -"):]
			if name, cause, ok := strings.Cut(tail, ": "); ok {
				if cause == "parse error" {
					cause = "not a number" // the only flags the flag package parses are ints
				}
				return fmt.Sprintf("bad --%s %s: %s", name, value, cause)
			}
		}
	}
	return msg
}

// usageError prints a one-line complaint about the arguments of a
// subcommand, and a hint, on stderr, and returns exitUsage.
func usageError(stderr io.Writer, cmd string, format string, args ...any) int {
	fmt.Fprintf(stderr, "redlock %s: %s\nRun \"redlock help %s\" for usage.\n", cmd, fmt.Sprintf(format, args...), cmd)
	return exitUsage
}

// nodeTimeoutTooLong is the usage error of a per-node timeout flag set
// above redlock.NodeTimeoutLimit, which every Client of the nodes keeps to
// (a restarted node's return waits it out; redlock.New refuses more).
func nodeTimeoutTooLong(flag string, d time.Duration) string {
	return fmt.Sprintf("%s must be at most %v, the longest node timeout any client may use (redlock.NodeTimeoutLimit), got %v: give %v or less; a node slower than that counts as failed",
		flag, redlock.NodeTimeoutLimit, d, redlock.NodeTimeoutLimit)
}

// durationFlag is a duration flag whose errors say what to write, and which
// knows whether it was given (defaults derived from other flags).
type durationFlag struct {
	d   time.Duration
	set bool
}

// durationVar registers a duration flag named name on fs.
func durationVar(fs *flag.FlagSet, name string, def time.Duration, help string) *durationFlag {
	f := &durationFlag{d: def}
	fs.Var(f, name, help)
	return f
}

func (f *durationFlag) String() string {
	if f == nil {
		return ""
	}
	return f.d.String()
}

func (f *durationFlag) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		if _, nerr := strconv.ParseFloat(s, 64); nerr == nil {
			return fmt.Errorf("a duration needs a unit, as in %ss or %sms", s, s)
		}
		return errors.New("not a duration (write it as 500ms, 10s, 2m or 1h30m)")
	}
	f.d, f.set = d, true
	return nil
}

// urlList is the --nodes flag: comma-separated URLs. Repeating the flag adds
// to the list.
type urlList []string

func (u *urlList) String() string {
	if u == nil {
		return ""
	}
	return strings.Join(*u, ",")
}

// Set adds the comma-separated nodes of s. A bare host:port (no scheme, no
// slash) means redis://host:port.
func (u *urlList) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			return errors.New("empty URL in the list (a stray comma?)")
		}
		if !strings.Contains(part, "/") {
			part = "redis://" + part
		}
		*u = append(*u, part)
	}
	return nil
}

// nodesFlag registers --nodes on fs.
func nodesFlag(fs *flag.FlagSet, help string) *urlList {
	u := &urlList{}
	fs.Var(u, "nodes", help)
	return u
}
