// Package cli implements skiff's subcommands. Each command lives in a file
// of its own and is listed in commands below; main.go only hands over the
// arguments and the standard streams.
package cli

import (
	"bytes"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/skiffvpn/skiff/internal/safetext"
	"github.com/skiffvpn/skiff/internal/version"
	"github.com/skiffvpn/skiff/tun/crashwatch"
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
// Everything written to stdout and stderr passes safetext.Writer: a name
// from a profile, a log line or an error that quotes one never puts a
// control byte on the terminal.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	crashwatch.MaybeMonitor() // a copy of skiff that restores routes after a crash
	stdout, stderr = safetext.NewWriter(stdout), safetext.NewWriter(stderr)
	if len(args) == 0 {
		return runWindow(nil, stdin, stdout, stderr)
	}
	name := args[0]
	if strings.Contains(name, "://") {
		// An import link the desktop hands its scheme's handler: the
		// window offers it (app/deeplink).
		return runWindow(args, stdin, stdout, stderr)
	}
	if name == "--version" || name == "-version" {
		name = "version"
	}
	if name == "help" && len(args) > 1 {
		return help(args[1], stdout, stderr)
	}
	if _, ok := commands[name]; ok && wantsHelp(args[1:]) {
		return help(name, stdout, stderr)
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

// usageLines are the usage lines of the commands whose flag set prints
// none of its own ("usage: skiff NAME [flags]" for the rest).
var usageLines = map[string]string{
	"close":   "skiff close [flags] ID",
	"gui":     "skiff [gui] [flags]",
	"version": "skiff version",
}

// wantsHelp reports whether args ask for help (-h, -help, --help before
// any "--").
func wantsHelp(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--help":
			return true
		}
	}
	return false
}

// help prints command name's help to stdout: its usage line, what it
// does and its flags (its own flag set's words, asked with -h), and
// returns 0; 2 for a command there is none of.
func help(name string, stdout, stderr io.Writer) int {
	c, ok := commands[name]
	if !ok || c.run == nil {
		fmt.Fprintf(stderr, "skiff help: no command %q\n\n", name)
		usage(stderr)
		return 2
	}
	var out bytes.Buffer
	if name != "version" { // takes no flags: it would just print the version
		c.run([]string{"-h"}, strings.NewReader(""), &out, &out)
	}
	text := strings.TrimPrefix(out.String(), "Usage of "+name+":\n")
	line := "usage: " + usageLines[name]
	if usageLines[name] == "" {
		line = "usage: skiff " + name + " [flags]"
	}
	if first, rest, _ := strings.Cut(text, "\n"); strings.HasPrefix(first, "usage: skiff "+name) {
		line, text = first, rest
	}
	fmt.Fprintf(stdout, "%s\n\n%s.\n", line, upperFirst(c.summary))
	if strings.TrimSpace(text) != "" {
		fmt.Fprintf(stdout, "\n%s", text)
	}
	return 0
}

// upperFirst capitalises s's first letter.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: skiff [command] [flags]  (skiff help COMMAND: a command's help)")
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
