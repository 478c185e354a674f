//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// forwarded are the signals run passes on to the command. Listening for
// SIGQUIT also keeps the Go runtime from dumping its goroutines on Ctrl-\.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// group is COMMAND running in a process group of its own, so that a signal
// to the group reaches everything COMMAND started: a shell and its children
// stop together when the lock is lost, and none of them runs on unprotected.
//
// The group's leader is a reaper (reaper_unix.go): a second redlock process
// that waits for this one to end. COMMAND is this process's child, and
// joins the reaper's group. If this process dies without saying goodbye
// (kill -9, a crash, the OOM killer), the reaper sends the whole group
// SIGTERM, then SIGKILL after the grace time: COMMAND, and what it started,
// do not outlive the supervisor that keeps their lock alive.
//
// When stdin is the terminal and redlock runs in its foreground, the group
// takes the foreground, so that COMMAND can read the terminal and Ctrl-C
// reaches it once, from the terminal.
type group struct {
	cmd     *exec.Cmd // COMMAND
	reaper  *exec.Cmd
	bye     *os.File // our end of the pipe the reaper watches
	pgid    int      // the reaper's pid
	restore func()   // gives the terminal back
}

// errNoReaper marks a failure to start the reaper: COMMAND was not started.
var errNoReaper = errors.New("cannot start the process that stops COMMAND if redlock dies")

// startGroup starts the reaper, then COMMAND (argv) in the reaper's process
// group, with the given streams and env added to redlock's environment. grace is the reaper's time from SIGTERM to
// SIGKILL. On error nothing is left running; an error wrapping errNoReaper
// means the reaper did not start.
func startGroup(argv, env []string, stdin io.Reader, stdout, stderr io.Writer, grace time.Duration) (*group, error) {
	reaper, bye, err := startReaper(grace, stderr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoReaper, err)
	}
	g := &group{reaper: reaper, bye: bye, pgid: reaper.Process.Pid, restore: func() {}}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, stderr
	cmd.WaitDelay = time.Second // for pipes a background child keeps open
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: g.pgid}
	if fd, ok := foregroundTTY(stdin); ok {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = fd
		g.restore = func() { takeTTY(fd) }
	}
	if err := cmd.Start(); err != nil {
		g.finish()
		return nil, err
	}
	g.cmd = cmd
	return g, nil
}

// signal sends sig to the whole group. The reaper ignores the forwarded
// signals; SIGKILL ends it with the rest.
func (g *group) signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return nil
	}
	return syscall.Kill(-g.pgid, s)
}

// finish, once COMMAND has exited, gives the terminal back and tells the
// reaper to leave without killing anything (processes COMMAND left in the
// background are not covered by the lock, and not stopped), then waits for
// it. A reaper already killed with the group is just reaped.
func (g *group) finish() {
	g.restore()
	_, _ = g.bye.Write([]byte{reaperBye}) // EPIPE when the reaper is gone
	_ = g.bye.Close()
	_ = g.reaper.Wait()
}

// exitStatus is the shell's view of how the command ended: its exit code, or
// 128+n when signal n killed it.
func exitStatus(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return exitSignalBase + int(ws.Signal())
	}
	return ps.ExitCode()
}
