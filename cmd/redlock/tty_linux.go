package main

import (
	"io"
	"os"
	"os/signal"
	"syscall"
	"unsafe"
)

// foregroundTTY returns stdin's descriptor when stdin is this process's
// controlling terminal and this process's group is in its foreground.
func foregroundTTY(stdin io.Reader) (int, bool) {
	f, ok := stdin.(*os.File)
	if !ok {
		return 0, false
	}
	fd := int(f.Fd())
	var pgrp int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCGPGRP, uintptr(unsafe.Pointer(&pgrp))); e != 0 {
		return 0, false // not a terminal, or not ours
	}
	return fd, int(pgrp) == syscall.Getpgrp()
}

// takeTTY puts this process's group back in the terminal's foreground.
func takeTTY(fd int) {
	// From a background group, changing the foreground raises SIGTTOU,
	// which would stop us; the command is gone, so nothing inherits this.
	signal.Ignore(syscall.SIGTTOU)
	pgrp := int32(syscall.Getpgrp())
	_, _, _ = syscall.Syscall(syscall.SYS_IOCTL, uintptr(fd), syscall.TIOCSPGRP, uintptr(unsafe.Pointer(&pgrp)))
}
