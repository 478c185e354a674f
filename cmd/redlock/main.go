// Command redlock is a distributed flock for shell scripts, built on the
// Redlock algorithm over independent Redis masters.
//
//	redlock run --nodes redis://a:6379,redis://b:6379,redis://c:6379 --key nightly-backup -- ./backup.sh
//	redlock status --key nightly-backup          # nodes from REDLOCK_NODES
//	redlock demo                                 # five in-process nodes, nothing to install
//
// run takes the lock, keeps it alive while the command runs, stops the
// command if the lock is lost, releases it when the command exits, and exits
// with the command's code. See docs/cli.md in the repository.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/redis/go-redis/v9"
)

const usageText = `redlock: a distributed lock (Redlock) for shell scripts.

Usage:
  redlock run    [--nodes URLS] --key KEY [--ttl D] [--wait D] [--grace D] -- COMMAND [ARG...]
  redlock status [--nodes URLS] --key KEY
  redlock demo   [--nodes URLS] [--workers N] [--tickets N]
  redlock help   [COMMAND]

The nodes are independent Redis masters, as comma-separated redis:// or
rediss:// URLs in --nodes or in the REDLOCK_NODES environment variable.
A lock needs a majority of them.

Run "redlock help COMMAND" for a command's flags and exit codes.
`

// command is one subcommand: its entry point and its usage text.
type command struct {
	main  func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
	usage string
}

var commands = map[string]command{
	"run":    {main: runMain, usage: runUsage},
	"status": {main: statusMain, usage: statusUsage},
	"demo":   {main: demoMain, usage: demoUsage},
}

func main() {
	// go-redis logs dial failures on its own; the commands report node
	// errors themselves, once, in context.
	redis.SetLogger(quietLogger{})
	os.Exit(dispatch(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// dispatch runs the subcommand named by args[0] and returns the exit code.
func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usageText)
			return exitOK
		}
		if c, ok := commands[rest[0]]; ok {
			fmt.Fprint(stdout, c.usage)
			return exitOK
		}
		fmt.Fprintf(stderr, "redlock: no command %q\n\n%s", rest[0], usageText)
		return exitUsage
	}
	c, ok := commands[name]
	if !ok {
		fmt.Fprintf(stderr, "redlock: no command %q\n\n%s", name, usageText)
		return exitUsage
	}
	return c.main(ctx, rest, stdin, stdout, stderr)
}

// newFlagSet returns a FlagSet for a subcommand that reports errors instead
// of exiting, and prints usage to stderr.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("redlock "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, usage) }
	return fs
}

// parseFlags parses args into fs. It returns ok false with the exit code when
// the command must stop: 0 after -h, exitUsage after an error (which the flag
// package has already printed, with the usage).
func parseFlags(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return exitOK, false
	default:
		return exitUsage, false
	}
}

// usageError prints a one-line complaint about the arguments of a
// subcommand and returns exitUsage.
func usageError(stderr io.Writer, cmd string, format string, args ...any) int {
	fmt.Fprintf(stderr, "redlock %s: %s\nRun \"redlock help %s\" for usage.\n", cmd, fmt.Sprintf(format, args...), cmd)
	return exitUsage
}

// quietLogger drops go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
