package cli

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/skiffvpn/skiff/app/service"
	"github.com/skiffvpn/skiff/internal/procs"
	"github.com/skiffvpn/skiff/internal/selfexe"
)

func init() {
	commands["service"] = command{"run the privileged service (install, uninstall, unit: manage it)", runService}
}

// runService implements `skiff service [install|uninstall|unit]`.
func runService(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "unit":
			fmt.Fprint(stdout, service.Unit(service.PackagedBinary))
			return 0
		case "install":
			exe, err := selfexe.Path()
			if err != nil {
				fmt.Fprintf(stderr, "skiff service install: %v\n", err)
				return 1
			}
			if err := service.Install(exe, stdout); err != nil {
				fmt.Fprintf(stderr, "skiff: %v\n", err)
				return 1
			}
			return 0
		case "uninstall":
			if err := service.Uninstall(stdout); err != nil {
				fmt.Fprintf(stderr, "skiff: %v\n", err)
				return 1
			}
			// With the service gone nothing would ever lift the kill
			// switch: the uninstaller does (the recorded routes, too).
			if code := runCleanup(nil, nil, stdout, stderr); code != 0 {
				return code
			}
			return 0
		}
	}
	fs := newFlags("service", stderr,
		"usage: skiff service [flags]        run the service in the foreground (as root)",
		"       skiff service install        install it with the OS service manager and start it",
		"       skiff service uninstall      stop and remove it",
		"       skiff service unit           print the systemd unit")
	var o service.Options
	fs.StringVar(&o.Socket, "socket", service.DefaultSocket, "the API socket (tests)")
	fs.StringVar(&o.StateDir, "state-dir", service.DefaultStateDir, "where the profile is kept")
	fs.StringVar(&o.Group, "group", service.Group, "the group whose members may operate Skiff")
	level := fs.String("log-level", "info", "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "skiff service: unknown argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	var lv slog.LevelVar
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		fmt.Fprintf(stderr, "skiff service: --log-level: %v\n", err)
		return 2
	}
	o.LogLevel = &lv
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(runGCPercent)
	}
	ctx, stop := stopContext()
	defer stop()
	defer procs.Start(ctx, procs.DefaultPolicy(), slog.New(slog.NewTextHandler(stderr, nil)))()
	if err := service.RunManaged(ctx, o); err != nil {
		fmt.Fprintf(stderr, "skiff service: %v\n", err)
		return 1
	}
	return 0
}
