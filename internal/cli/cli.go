// Package cli implements skiff's subcommands. Each command lives in a file
// of its own and is listed in commands below; main.go only hands over the
// arguments and the standard streams.
package cli

import (
	"fmt"
	"io"
	"sort"

	"github.com/skiffvpn/skiff/internal/crashwatch"
	"github.com/skiffvpn/skiff/internal/version"
)

// command is one subcommand: it gets the arguments after its name and
// returns the process exit code.
type command struct {
	summary string
	run     func(args []string, stdin io.Reader, stdout, stderr io.Writer) int
}

// commands lists the subcommands; each file adds its own line.
var commands = map[string]command{
	"help":    {"show this help", nil},
	"import":  {"add a subscription URL, a file of links/Clash/sing-box/SIP008, or - for stdin", runImport},
	"nodes":   {"list saved nodes (--json for scripts)", runNodes},
	"cleanup": {"restore routes and rules left by a TUN run that did not stop; remove the kill switch", runCleanup},
	"run":     {"run the core headless: a local SOCKS5/HTTP proxy through the servers of --link", runCmd},
	"version": {"print the version and the commit skiff was built from (also --version)", runVersion},
}

// Main runs the subcommand named by args[0] and returns the exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	crashwatch.MaybeMonitor() // a copy of skiff that restores routes after a crash
	if len(args) == 0 {
		return runWindow(nil, stdin, stdout, stderr)
	}
	name := args[0]
	if name == "--version" || name == "-version" {
		name = "version"
	}
	c, ok := commands[name]
	if !ok || c.run == nil {
		if name == "help" || name == "-h" || name == "--help" {
			usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "skiff: unknown command %q\n\n", name)
		usage(stderr)
		return 2
	}
	return c.run(args[1:], stdin, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: skiff [command] [flags]")
	fmt.Fprintln(w, "\nWithout a command skiff opens its window. Commands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
}

// runVersion implements `skiff version` and `skiff --version`.
func runVersion(_ []string, _ io.Reader, stdout, _ io.Writer) int {
	fmt.Fprintln(stdout, "skiff", version.Get())
	return 0
}
