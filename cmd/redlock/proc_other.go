//go:build !unix

package main

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"time"
)

// forwarded are the signals run passes on to the command.
var forwarded = []os.Signal{os.Interrupt}

// group is COMMAND alone: without process groups there is no group to
// signal, and no reaper. If redlock dies, COMMAND runs on (docs/cli.md says
// so).
type group struct {
	cmd *exec.Cmd
}

// errNoReaper is never returned here.
var errNoReaper = errors.New("cannot start the process that stops COMMAND if redlock dies")

// startGroup starts COMMAND (argv) with the given streams and env added to
// redlock's environment.
func startGroup(argv, env []string, stdin io.Reader, stdout, stderr io.Writer, _ time.Duration) (*group, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.WaitDelay = time.Second // for pipes a background child keeps open
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &group{cmd: cmd}, nil
}

// signal stops the command: other signals cannot be sent here.
func (g *group) signal(os.Signal) error { return g.cmd.Process.Kill() }

// finish does nothing: there is no reaper and no terminal to give back.
func (g *group) finish() {}

// exitStatus is the command's exit code.
func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }

// reaperCommand is the hidden command of the Unix reaper; here it only
// reports that it does not exist.
const reaperCommand = "__reaper"

func reaperMain(_ []string, _, stderr io.Writer) int {
	return usageError(stderr, reaperCommand, "no reaper on this system")
}
