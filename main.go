// Command skiff is a TUN-mode VPN client. Without arguments it opens the
// desktop window; its subcommands run the core headless and script it
// (`skiff help` lists them).
package main

import (
	"os"
	"runtime"

	"github.com/skiffvpn/skiff/app/cli"
)

// The heap profiler is off unless `skiff run --pprof` serves its profile
// (see cli). On, it samples an allocation per 512 KiB and files each
// sampled call stack in a hash table of 1.4 MiB (runtime's buckhash) at a
// place of its own: the samples of a burst of connections touch pages all
// over it, memory that nothing reads.
func init() { runtime.MemProfileRate = 0 }

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
