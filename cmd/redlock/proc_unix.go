//go:build unix

package main

import (
	"io"
	"os"
	"os/exec"
	"syscall"
)

// forwarded are the signals run passes on to the command. Listening for
// SIGQUIT also keeps the Go runtime from dumping its goroutines on Ctrl-\.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// ownProcessGroup makes cmd start in a process group of its own, so that a
// signal to the group reaches everything the command started: a shell and
// its children stop together when the lock is lost, and none of them runs on
// unprotected. When stdin is the terminal and redlock runs in its
// foreground, the new group takes the foreground, so that the command can
// read the terminal and Ctrl-C reaches it once, from the terminal. The
// returned function gives the terminal back; call it after the command exits.
func ownProcessGroup(cmd *exec.Cmd, stdin io.Reader) (restore func()) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	fd, ok := foregroundTTY(stdin)
	if !ok {
		return func() {}
	}
	cmd.SysProcAttr.Foreground = true
	cmd.SysProcAttr.Ctty = fd
	return func() { takeTTY(fd) }
}

// signalGroup sends sig to the command's process group.
func signalGroup(cmd *exec.Cmd, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok || cmd.Process == nil {
		return nil
	}
	return syscall.Kill(-cmd.Process.Pid, s)
}

// exitStatus is the shell's view of how the command ended: its exit code, or
// 128+n when signal n killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}
