//go:build unix

package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// The reaper is "redlock __reaper GRACE", a hidden command that redlock run
// starts as the leader of COMMAND's process group (see group). It inherits
// the read end of a pipe as descriptor 3, and blocks reading it:
//
//   - one byte (reaperBye): COMMAND has exited and run is releasing the
//     lock normally; the reaper exits 0 and kills nothing;
//   - end of file: run died without a word, and nobody keeps the lock
//     alive. The reaper sends SIGTERM to its group, then SIGKILL after
//     GRACE, itself included.
//
// The pipe is closed by the kernel when run's process ends, however it
// ends, and on every Unix. That is why this is not done with a parent-death
// signal (Linux's PR_SET_PDEATHSIG): that exists on Linux only, reaches only
// the one child (a shell's own children would run on), and fires when the
// thread that forked exits rather than the process, which in Go needs the
// forking goroutine locked to its thread for as long as the child runs.
//
// The reaper ignores the signals run forwards to the group (they are
// COMMAND's to act on) and job-control stops, so that it is there, running,
// when it is needed.

const (
	// reaperCommand is the hidden command name; dispatch knows it.
	reaperCommand = "__reaper"
	// reaperBye is what run writes when it ends normally.
	reaperBye = 'x'
	// reaperReady is what the reaper prints once it ignores the signals
	// meant for COMMAND: run starts COMMAND, and can forward signals to the
	// group, only then.
	reaperReady = "ready\n"
	// reaperStartTimeout bounds the wait for reaperReady.
	reaperStartTimeout = 10 * time.Second
	// reaperFD is the descriptor of the pipe in the reaper.
	reaperFD = 3
)

// startReaper starts the reaper, as the leader of a new process group, and
// waits until it is ready. It returns the reaper and the write end of its
// pipe. On error nothing is left running.
func startReaper(grace time.Duration, stderr io.Writer) (*exec.Cmd, *os.File, error) {
	exe, err := executable()
	if err != nil {
		return nil, nil, err
	}
	theirs, bye, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		theirs.Close()
		bye.Close()
		return nil, nil, err
	}
	defer readyR.Close()
	cmd := exec.Command(exe, reaperCommand, grace.String())
	cmd.Args[0] = "redlock" // as ps shows it
	cmd.Stdout, cmd.Stderr = readyW, stderr
	cmd.ExtraFiles = []*os.File{theirs} // descriptor 3
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	theirs.Close()
	readyW.Close()
	if err != nil {
		bye.Close()
		return nil, nil, err
	}
	if err := awaitReady(readyR); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		bye.Close()
		return nil, nil, err
	}
	return cmd, bye, nil
}

// awaitReady reads the reaper's reaperReady, within reaperStartTimeout.
func awaitReady(r *os.File) error {
	_ = r.SetReadDeadline(time.Now().Add(reaperStartTimeout))
	b, err := io.ReadAll(r) // the reaper closes its stdout once ready
	switch {
	case err != nil:
		return err
	case string(b) != reaperReady:
		return fmt.Errorf("it said %q, not %q", b, reaperReady)
	}
	return nil
}

// executable is the path by which to run this program again. On Linux,
// /proc/self/exe is this very binary even if the file has been replaced
// (an upgrade) since it started.
func executable() (string, error) {
	const self = "/proc/self/exe"
	if _, err := os.Stat(self); err == nil {
		return self, nil
	}
	return os.Executable()
}

// reaperMain is the reaper process. It returns only on an error or when run
// says goodbye; otherwise it ends by its own SIGKILL.
func reaperMain(args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 {
		return usageError(stderr, reaperCommand, "want one argument, the grace time")
	}
	grace, err := time.ParseDuration(args[0])
	if err != nil || grace < 0 {
		return usageError(stderr, reaperCommand, "bad grace time %q", args[0])
	}
	// Kill only a group of our own: started any other way, this process
	// shares its group with its parent's, a shell's, a whole session's.
	if syscall.Getpgrp() != os.Getpid() {
		return usageError(stderr, reaperCommand, "not the leader of a process group (this command is run by redlock run)")
	}
	parent := os.Getppid() // redlock run, until it dies
	pipe := os.NewFile(reaperFD, "redlock run")
	if fi, err := pipe.Stat(); err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
		return usageError(stderr, reaperCommand, "no pipe from redlock run on descriptor %d (this command is run by redlock run)", reaperFD)
	}
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU,
		syscall.SIGPIPE) // a closed stderr must not end us before the SIGKILL
	fmt.Fprint(stdout, reaperReady)
	if c, ok := stdout.(io.Closer); ok {
		_ = c.Close()
	}

	var b [1]byte
	n, err := pipe.Read(b[:])
	if n == 1 && b[0] == reaperBye {
		return exitOK
	}
	if err != nil && !errors.Is(err, io.EOF) {
		fmt.Fprintf(stderr, "redlock: reading the pipe from redlock run: %v; stopping COMMAND\n", err)
	}
	_ = syscall.Kill(0, syscall.SIGTERM) // our group: COMMAND and all it started
	// Say why, without letting a stderr nobody reads hold up the SIGKILL.
	// The goroutine ends with this process, at the SIGKILL below.
	go fmt.Fprintf(stderr, "redlock: redlock run (pid %d) is gone and nobody keeps the lock alive: "+
		"stopping the command: SIGTERM now, SIGKILL in %v\n", parent, grace)
	time.Sleep(grace)
	_ = syscall.Kill(0, syscall.SIGKILL)
	return exitLockLost // not reached: the SIGKILL ended this process too
}
