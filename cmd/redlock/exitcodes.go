package main

// Exit codes. Besides these, run exits with the command's own code, and with
// 128+n when the command (or the wait for the lock) ended by signal n, as
// shells do. The values from 64 up follow BSD sysexits.h, so that scripts and
// service managers that know those codes read them right.
const (
	// exitOK: success; for run, the command exited 0; for status, the
	// key is held: by a lock, readers or permits; for leader, the election
	// has a leader.
	exitOK = 0
	// exitFailure: demo found an inexact locked sale; nodes
	// declare-fresh refused a deployment that holds locks.
	exitFailure = 1
	// exitFree: status found the lock free.
	exitFree = 1
	// exitNoLeader: leader found nobody leading the election.
	exitNoLeader = 1
	// exitUsage: bad flags, a missing command, a bad URL or duration.
	exitUsage = 2
	// exitNeither: status found the key on some nodes, but not held on a
	// majority (no token, or no live reader or permit, on a majority), or
	// a key of another Redis type: neither held nor free.
	exitNeither = 3
	// exitUnavailable (EX_UNAVAILABLE): no majority of the nodes counts:
	// they cannot be reached, refuse the URLs' credentials, or are kept out
	// by the restart quarantine or the clock check (redlock.IsUnavailable),
	// so no lock can be taken or trusted; waiting will not help until an
	// operator acts (redlock nodes check says how).
	exitUnavailable = 69
	// exitLockLost (EX_SOFTWARE): the lock was lost while the command ran;
	// the command was stopped and its work may be incomplete.
	exitLockLost = 70
	// exitTempFail (EX_TEMPFAIL): the lock is held by another owner (or
	// kept by its lock-delay, or another kind of lock on the key), or was
	// not obtained within --wait because it was; try again later.
	exitTempFail = 75
	// exitCannotExec: the command was found but could not be started.
	exitCannotExec = 126
	// exitNotFound: the command was not found.
	exitNotFound = 127
	// exitSignalBase is added to a signal's number for a death by signal.
	exitSignalBase = 128
)
