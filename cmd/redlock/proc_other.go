//go:build !unix

package main

import (
	"io"
	"os"
	"os/exec"
)

// forwarded are the signals run passes on to the command.
var forwarded = []os.Signal{os.Interrupt}

// ownProcessGroup does nothing where there are no process groups.
func ownProcessGroup(*exec.Cmd, io.Reader) (restore func()) { return func() {} }

// signalGroup stops the command: other signals cannot be sent here.
func signalGroup(cmd *exec.Cmd, _ os.Signal) error {
	if cmd.Process == nil {
		return nil
	}
	return cmd.Process.Kill()
}

// exitStatus is the command's exit code.
func exitStatus(ps *os.ProcessState) int { return ps.ExitCode() }
