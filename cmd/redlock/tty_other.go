//go:build unix && !linux

package main

import "io"

// foregroundTTY reports false: handing the terminal to the command is done
// on Linux only. Elsewhere the command cannot read the terminal (it would
// stop on SIGTTIN); Ctrl-C still reaches it through redlock.
func foregroundTTY(io.Reader) (int, bool) { return 0, false }

func takeTTY(int) {}
