// Command skiff is a TUN-mode VPN client. Without arguments it opens the
// desktop window; its subcommands run the core headless and script it
// (`skiff help` lists them).
package main

import (
	"os"

	"github.com/skiffvpn/skiff/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
