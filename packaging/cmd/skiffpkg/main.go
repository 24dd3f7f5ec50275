// Command skiffpkg builds Skiff's release packages from binaries the
// Makefile has built: `skiffpkg linux` the deb and the rpm, `skiffpkg
// windows-res` the Windows executable's icon and version resource (a .syso
// the Go linker picks up), `skiffpkg wintun` fetches the official
// wintun.dll and its licence through the module proxy and checks them
// against their pinned hashes. `make package` runs them; they
// live in a module of their own so that nfpm's dependencies stay out of the
// product's go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/skiffvpn/skiff/packaging/linux"
	"github.com/skiffvpn/skiff/packaging/windows"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, "usage: skiffpkg linux|windows-res|wintun [flags]")
		return 2
	}
	fs := flag.NewFlagSet("skiffpkg "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "upstream version, e.g. 0.1.0")
	release := fs.String("release", "1", "package release (build) number")
	commit := fs.String("commit", "", "source commit (windows-res)")
	epoch := fs.String("date", os.Getenv("SOURCE_DATE_EPOCH"), "build date as Unix seconds (default: SOURCE_DATE_EPOCH, else now)")
	repo := fs.String("repo", "..", "repository root")
	bin := fs.String("bin", "", "the skiff binary: the command line and the service (linux)")
	window := fs.String("window", "", "the skiff-window binary (linux)")
	trayBin := fs.String("tray", "", "the skiff-tray binary (linux)")
	program := fs.String("program", "skiff", "the executable the resource is for: skiff, skiff-window or skiff-tray (windows-res)")
	unit := fs.String("unit", "", "the systemd unit from `skiff service unit` (linux); empty: no service in the packages")
	out := fs.String("out", "", "output directory (linux, wintun) or .syso file (windows-res)")
	ico := fs.String("ico", "", "also write the icon as a .ico here (windows-res)")
	goCmd := fs.String("go", "go", "the go command that fetches the module (wintun)")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	date := time.Now().UTC()
	if *epoch != "" {
		sec, err := strconv.ParseInt(*epoch, 10, 64)
		if err != nil {
			fmt.Fprintf(stderr, "skiffpkg: --date %q: not Unix seconds\n", *epoch)
			return 2
		}
		date = time.Unix(sec, 0).UTC()
	}
	switch args[0] {
	case "linux":
		if *version == "" || *bin == "" || *window == "" || *trayBin == "" || *out == "" {
			fmt.Fprintln(stderr, "skiffpkg linux: --version, --bin, --window, --tray and --out are required")
			return 2
		}
		if *unit == "" {
			fmt.Fprintln(stderr, "skiffpkg linux: WARNING: no --unit: the packages are built without the systemd service")
		}
		paths, err := linux.Build(linux.Spec{Version: *version, Release: *release, Date: date, Binary: *bin, Window: *window, Tray: *trayBin, Unit: *unit, Repo: *repo, Out: *out})
		if err != nil {
			fmt.Fprintf(stderr, "skiffpkg linux: %v\n", err)
			return 1
		}
		for _, p := range paths {
			fmt.Fprintln(stdout, p)
		}
	case "windows-res":
		if *version == "" || *out == "" {
			fmt.Fprintln(stderr, "skiffpkg windows-res: --version and --out are required")
			return 2
		}
		r := windows.Resource{Program: *program, Version: *version, Build: *release, Commit: *commit, Year: date.Year(), Repo: *repo}
		if err := r.WriteSyso(*out); err != nil {
			fmt.Fprintf(stderr, "skiffpkg windows-res: %v\n", err)
			return 1
		}
		fmt.Fprintln(stdout, *out)
		if *ico != "" {
			b, err := r.ICO()
			if err == nil {
				err = os.WriteFile(*ico, b, 0o644)
			}
			if err != nil {
				fmt.Fprintf(stderr, "skiffpkg windows-res: %v\n", err)
				return 1
			}
			fmt.Fprintln(stdout, *ico)
		}
	case "wintun":
		if *out == "" {
			fmt.Fprintln(stderr, "skiffpkg wintun: --out is required")
			return 2
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := windows.FetchWintun(ctx, *goCmd, *out); err != nil {
			fmt.Fprintf(stderr, "skiffpkg wintun: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "%s, %s: the official wintun %s amd64 build (SHA-256 %s) from %s@%s\n",
			filepath.Join(*out, windows.WintunDLL), filepath.Join(*out, windows.WintunLicense),
			windows.WintunVersion, windows.WintunSHA256, windows.WintunModule, windows.WintunModuleVersion)
	default:
		fmt.Fprintf(stderr, "skiffpkg: unknown command %q\n", args[0])
		return 2
	}
	return 0
}
