// Command redlock is a distributed flock for shell scripts, built on the
// Redlock algorithm over independent Redis masters.
//
//	redlock run --nodes redis://a:6379,redis://b:6379,redis://c:6379 --key nightly-backup -- ./backup.sh
//	redlock status --key nightly-backup          # nodes from REDLOCK_NODES
//	redlock leader --election scheduler          # who leads (Client.Campaign)
//	redlock nodes check                          # can the nodes make a majority now?
//	redlock demo                                 # five in-process nodes, nothing to install
//	redlock --version                            # the module's version and Go's
//
// run takes the lock, keeps it alive while the command runs, stops the
// command if the lock is lost, releases it when the command exits, and exits
// with the command's code. See docs/cli.md in the repository.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/redis/go-redis/v9"
)

const usageText = `redlock: a distributed lock (Redlock) for shell scripts.

Usage:
  redlock run    [--nodes URLS] --key KEY [--ttl D] [--wait D] [--grace D]
                 [--node-timeout D] [--max-ttl D] [--quarantine D]
                 [--lock-delay D] [--max-hold D] [--conflict-exit-code N] -- COMMAND [ARG...]
  redlock status [--nodes URLS] --key KEY [--timeout D] [--json]
  redlock leader [--nodes URLS] --election NAME [--timeout D]
  redlock nodes  check [--nodes URLS] [--timeout D] [--quarantine D]
  redlock nodes  declare-fresh [--nodes URLS] [--timeout D]
  redlock demo   [--nodes URLS] [--workers N] [--tickets N]
  redlock version             (or: redlock --version)
  redlock help   [COMMAND]

The nodes are independent Redis masters, as comma-separated URLs
(redis://host:port, rediss:// for TLS, or a bare host:port) in --nodes or in
the REDLOCK_NODES environment variable. A lock needs a majority of them.

Run "redlock help COMMAND" for a command's flags and exit codes.
`

// command is one subcommand: its entry point, its usage text, and the
// registration of its flags (which the tests compare with the usage).
type command struct {
	main  func(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int
	usage string
	flags func(fs *flag.FlagSet)
}

var commands = map[string]command{
	"run":     {main: runMain, usage: runUsage, flags: func(fs *flag.FlagSet) { new(runner).define(fs) }},
	"status":  {main: statusMain, usage: statusUsage, flags: func(fs *flag.FlagSet) { statusFlags(fs) }},
	"leader":  {main: leaderMain, usage: leaderUsage, flags: func(fs *flag.FlagSet) { leaderFlags(fs) }},
	"nodes":   {main: nodesMain, usage: nodesUsage, flags: func(fs *flag.FlagSet) { nodesFlags(fs) }},
	"demo":    {main: demoMain, usage: demoUsage, flags: func(fs *flag.FlagSet) { demoFlags(fs) }},
	"version": {main: versionMain, usage: versionUsage, flags: func(*flag.FlagSet) {}},
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
	case reaperCommand: // hidden: run starts it, see reaper_unix.go
		return reaperMain(rest, stdout, stderr)
	case "-version", "--version":
		return versionMain(ctx, rest, stdin, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 {
			fmt.Fprint(stdout, usageText)
			return exitOK
		}
		if c, ok := commands[rest[0]]; ok {
			fmt.Fprint(stdout, c.usage)
			return exitOK
		}
		return unknownCommand(stderr, rest[0])
	}
	c, ok := commands[name]
	if !ok {
		return unknownCommand(stderr, name)
	}
	return c.main(ctx, rest, stdin, stdout, stderr)
}

// unknownCommand says that there is no command name, and where to look.
func unknownCommand(stderr io.Writer, name string) int {
	fmt.Fprintf(stderr, "redlock: no command %q\nRun \"redlock help\" for usage.\n", name)
	return exitUsage
}

// quietLogger drops go-redis's internal log lines.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
