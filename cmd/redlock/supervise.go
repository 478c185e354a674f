package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"syscall"
	"time"

	"github.com/redlockgo/redlock/redlock"
)

// supervise runs the command under the lock l and returns redlock's exit
// code. The lock is released when the command exits. While it runs, the
// nodes keep a record of who holds the lock, for status.
func (r *runner) supervise(ctx context.Context, l *redlock.Lock) int {
	if err := l.Err(); err != nil {
		r.lost(err, "before the command started")
		_ = l.Unlock(context.WithoutCancel(ctx))
		return exitLockLost
	}
	rec := newHolderRecord(r.key, l.Token(), r.argv, r.pools, r.nodeTimeout)
	rec.write(ctx)
	stopKeeping := rec.keep(context.WithoutCancel(ctx), r.extended)
	// release ends the record, then the lock.
	release := func() error {
		stopKeeping()
		rec.remove(context.WithoutCancel(ctx))
		return l.Unlock(context.WithoutCancel(ctx))
	}

	// The command learns the lock it runs under, so that it can extend or
	// release it itself (redlock.Client.Resume with the token).
	env := []string{"REDLOCK_KEY=" + r.key, "REDLOCK_TOKEN=" + l.Token()}
	g, err := startGroup(r.argv, env, r.stdin, r.stdout, r.stderr, r.grace)
	if err != nil {
		_ = release()
		return r.notStarted(err)
	}
	lostErr := r.watch(ctx, l, g)
	g.finish()

	if lostErr == nil && errors.Is(l.Err(), redlock.ErrLockLost) {
		// Lost as the command finished: its last moments may have run
		// unprotected, so its success cannot be vouched for.
		lostErr = l.Err()
		r.lost(lostErr, "as the command finished")
	}
	unlockErr := release()
	if lostErr != nil {
		return exitLockLost
	}
	if unlockErr != nil {
		fmt.Fprintf(r.stderr, "redlock: warning: lock %q not released everywhere (%s); it expires within %v\n",
			r.key, explain(unlockErr), r.ttl)
	}
	return exitStatus(g.cmd.ProcessState)
}

// watch waits for the command to exit, passing the forwarded signals on to
// its group, and stopping the group when the lock is lost or ctx ends:
// SIGTERM, then SIGKILL after the grace time. It returns the loss, if any.
func (r *runner) watch(ctx context.Context, l *redlock.Lock, g *group) (lostErr error) {
	exited := make(chan struct{})
	go func() {
		_ = g.cmd.Wait() // the exit status is in cmd.ProcessState
		close(exited)
	}()
	var (
		lockDone  = l.Done()
		ctxDone   = ctx.Done()
		killTimer *time.Timer
		kill      <-chan time.Time
	)
	defer func() {
		if killTimer != nil {
			killTimer.Stop()
		}
	}()
	// terminate asks the command to stop, and kills it after the grace time.
	terminate := func() {
		if killTimer == nil {
			_ = g.signal(syscall.SIGTERM)
			killTimer = time.NewTimer(r.grace)
			kill = killTimer.C
		}
	}
	for {
		select {
		case s := <-r.sigs:
			_ = g.signal(s)
		case <-lockDone:
			lockDone = nil
			lostErr = l.Err()
			r.lost(lostErr, "while the command ran")
			fmt.Fprintf(r.stderr, "redlock: stopping the command: SIGTERM now, SIGKILL in %v\n", r.grace)
			terminate()
		case <-ctxDone:
			ctxDone = nil
			terminate()
		case <-kill:
			kill = nil
			_ = g.signal(syscall.SIGKILL)
		case <-exited:
			return lostErr
		}
	}
}

// notStarted reports a command that could not be started and returns the
// exit code: 127 when it was not found, 126 otherwise.
func (r *runner) notStarted(err error) int {
	if errors.Is(err, errNoReaper) {
		fmt.Fprintf(r.stderr, "redlock: %v; not running %q\n", err, r.argv[0])
		return exitCannotExec
	}
	code := exitCannotExec
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		code = exitNotFound
	}
	fmt.Fprintf(r.stderr, "redlock: cannot run %q: %v\n", r.argv[0], unwrapExec(err))
	return code
}

// lost reports the loss of the lock, naming the nodes.
func (r *runner) lost(err error, when string) {
	why := explain(err)
	if errors.Is(err, redlock.ErrMaxHold) {
		why = fmt.Sprintf("held for the --max-hold of %v", r.maxHold)
	}
	fmt.Fprintf(r.stderr, "redlock: lock %q lost %s: %s\n", r.key, when, why)
}

// unwrapExec drops what exec adds before the cause ("fork/exec path: ",
// "exec: name: "): the message names the command already.
func unwrapExec(err error) error {
	var ee *exec.Error
	if errors.As(err, &ee) {
		return ee.Err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
