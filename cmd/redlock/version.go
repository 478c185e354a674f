package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

const versionUsage = `Usage: redlock version    (or: redlock --version)

Prints the version of the module redlock was built from and the Go version
that built it, on one line: "redlock v1.2.3 go1.26.0". A binary built from a
checkout rather than by "go install ...@VERSION" says "(devel)" or a
pseudo-version (v0.0.0-DATE-COMMIT), as the go command recorded it.

Exit codes:
  0    printed
  2    an argument was given
`

// versionMain is "redlock version" and "redlock --version".
func versionMain(_ context.Context, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlagSet("version")
	if code, ok := parseFlags(fs, "version", versionUsage, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "version", "unexpected argument %q", fs.Arg(0))
	}
	bi, ok := debug.ReadBuildInfo()
	fmt.Fprintln(stdout, versionLine(bi, ok))
	return exitOK
}

// versionLine is the version line from the build information the go
// command embeds: the main module's version, "(devel)" when it recorded
// none (or there is no build information at all), and the Go version.
func versionLine(bi *debug.BuildInfo, ok bool) string {
	version, goVersion := "(devel)", runtime.Version()
	if ok && bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		if bi.GoVersion != "" {
			goVersion = bi.GoVersion
		}
	}
	return "redlock " + version + " " + goVersion
}
