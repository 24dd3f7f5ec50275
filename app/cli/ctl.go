package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/skiffvpn/skiff/app/service"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/stats"
)

// The commands that drive the service as a client: each talks to the
// service's socket through api.Client, as the window does.
func init() {
	commands["status"] = command{"show the service's state (--json for scripts)", runStatus}
	commands["connect"] = command{"connect through the service (--tun for the system-wide VPN)", runConnect}
	commands["disconnect"] = command{"disconnect the service", runDisconnect}
	commands["connections"] = command{"list the service's open connections (--json)", runConnections}
	commands["close"] = command{"close one of the service's connections by ID", runClose}
	commands["watch"] = command{"stream the service's status, events (--stats, --logs) as JSON lines", runWatch}
	commands["probe"] = command{"test the latency of saved nodes through the service", runProbe}
}

// clientFlags adds --socket to fs and returns the client it names.
func clientFlags(fs *flag.FlagSet) func() *api.Client {
	socket := fs.String("socket", service.DefaultSocket, "the service's socket")
	return func() *api.Client { return service.NewClient(*socket) }
}

// failed prints err for command name and returns the exit code: 3 when the
// service is not reachable, 4 when the caller may not use it, 1 otherwise.
func failed(stderr io.Writer, name string, err error) int {
	fmt.Fprintf(stderr, "skiff %s: %v\n", name, err)
	switch {
	case errors.Is(err, api.ErrUnavailable):
		return 3
	case errors.Is(err, api.ErrForbidden):
		return 4
	}
	return 1
}

// newFlags is the flag set of command name, its errors and usage to stderr.
// Its usage is the lines of usage, when given, then the flags.
func newFlags(name string, stderr io.Writer, usage ...string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	if len(usage) > 0 {
		fs.Usage = func() {
			for _, l := range usage {
				fmt.Fprintln(stderr, l)
			}
			fs.PrintDefaults()
		}
	}
	return fs
}

// callService opens a client of the service and a call bounded by d and
// ended on ^C; done closes both.
func callService(client func() *api.Client, d time.Duration) (context.Context, *api.Client, func()) {
	ctx, done := callContext(d)
	c := client()
	return ctx, c, func() { c.Close(); done() }
}

// callContext bounds a client call and ends it on ^C.
func callContext(d time.Duration) (context.Context, func()) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	ctx, cancel := context.WithTimeout(ctx, d)
	return ctx, func() { cancel(); stop() }
}

func runStatus(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return runQuery(args, "status", stdout, stderr, (*api.Client).Status, func(w io.Writer, st api.Status) error {
		printStatus(w, st)
		return nil
	})
}

// runQuery implements a command that asks the service one thing and prints
// it, as a table or text (print) or with --json.
func runQuery[T any](args []string, name string, stdout, stderr io.Writer, ask func(*api.Client, context.Context) (T, error), print func(io.Writer, T) error) int {
	fs := newFlags(name, stderr)
	client := clientFlags(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, c, done := callService(client, 10*time.Second)
	defer done()
	v, err := ask(c, ctx)
	if err != nil {
		return failed(stderr, name, err)
	}
	if *asJSON {
		json.NewEncoder(stdout).Encode(v)
		return 0
	}
	if print(stdout, v) != nil {
		return 1
	}
	return 0
}

func printStatus(w io.Writer, st api.Status) {
	fmt.Fprintf(w, "state: %s (since %s)\n", st.State, st.Since.Local().Format(time.TimeOnly))
	if st.Route != nil {
		fmt.Fprintf(w, "route: %s (%s)\n", st.Route.Name, st.Route.Mode)
	}
	if st.Member != "" {
		fmt.Fprintf(w, "server: %s\n", st.Member)
	} else if st.Outbound != "" {
		fmt.Fprintf(w, "server: %s\n", st.Outbound)
	}
	if st.Listen != "" {
		fmt.Fprintf(w, "proxy: %s\n", st.Listen)
	}
	if st.TUN != "" {
		fmt.Fprintf(w, "tun: %s\n", st.TUN)
	}
	if st.Routing != "" {
		fmt.Fprintf(w, "routing: %s\n", st.Routing)
	}
	if st.Error != nil {
		fmt.Fprintf(w, "error (%s): %s\n", st.Error.Code, st.Error.Message)
	}
}

func runConnect(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("connect", stderr)
	client := clientFlags(fs)
	var r plan.Request
	tunMode := fs.Bool("tun", false, "the system-wide VPN (TUN) as well as the local proxy")
	fs.StringVar(&r.Target, "node", "", "a saved node's or group's ID or name (default: the profile's selection)")
	fs.StringVar(&r.Listen, "listen", "", "the local proxy's loopback address (default "+core.DefaultListen+")")
	fs.StringVar(&r.DNS, "dns", "", "with --tun: fake-ip (default) or real-ip")
	fs.BoolVar(&r.NoIPv6, "no-ipv6", false, "with --tun: leave IPv6 out of the tunnel")
	atStart := fs.Bool("at-start", false, "also reconnect like this whenever the service starts (at boot, after a crash) until you disconnect; --at-start=false turns that off (the profile's connectAtStart)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	setAtStart := false
	fs.Visit(func(f *flag.Flag) { setAtStart = setAtStart || f.Name == "at-start" })
	if *tunMode {
		r.Mode = plan.ModeTUN
	}
	if err := r.Validate(); err != nil {
		fmt.Fprintf(stderr, "skiff connect: %v\n", err)
		return 2
	}
	ctx, c, done := callService(client, 60*time.Second)
	defer done()
	rt, err := c.Connect(ctx, r)
	if err != nil {
		return failed(stderr, "connect", err)
	}
	fmt.Fprintf(stdout, "connected through %s (%s)\n", rt.Name, rt.Mode)
	for _, s := range rt.Skipped {
		fmt.Fprintf(stdout, "  left out: %s\n", s)
	}
	if setAtStart {
		if err := setConnectAtStart(ctx, c, *atStart); err != nil {
			return failed(stderr, "connect --at-start", err)
		}
		if *atStart {
			fmt.Fprintln(stdout, "the service reconnects like this when it starts, until you disconnect")
		} else {
			fmt.Fprintln(stdout, "the service no longer reconnects when it starts")
		}
	}
	return 0
}

// setConnectAtStart saves the profile's connectAtStart setting through the
// service, against the revision it read.
func setConnectAtStart(ctx context.Context, c *api.Client, on bool) error {
	p, rev, err := c.Profile(ctx)
	if err != nil {
		return err
	}
	if p.Settings.ConnectAtStart == on {
		return nil
	}
	p.Settings.ConnectAtStart = on
	return c.SetProfile(ctx, p, rev)
}

func runDisconnect(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("disconnect", stderr)
	client := clientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, c, done := callService(client, 30*time.Second)
	defer done()
	if err := c.Disconnect(ctx); err != nil {
		return failed(stderr, "disconnect", err)
	}
	fmt.Fprintln(stdout, "disconnected")
	return 0
}

func runConnections(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	return runQuery(args, "connections", stdout, stderr, (*api.Client).Connections, func(w io.Writer, cs []stats.ConnInfo) error {
		rows := [][]string{{"ID", "NET", "PROGRAM", "DESTINATION", "OUTBOUND", "UP", "DOWN"}}
		for _, ci := range cs {
			dst := ci.Destination
			if ci.Host != "" {
				dst = ci.Host
			}
			prog := ci.Program()
			if prog == "" {
				prog = "-" // not looked up (or not found) on this system
			}
			rows = append(rows, []string{strconv.FormatUint(ci.ID, 10), ci.Network, tabSafe(prog), tabSafe(dst), tabSafe(ci.Outbound),
				strconv.FormatInt(ci.Up, 10), strconv.FormatInt(ci.Down, 10)})
		}
		return writeTable(w, rows)
	})
}

func runClose(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("close", stderr)
	client := clientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fmt.Fprintln(stderr, "usage: skiff close ID  (skiff connections lists them)")
		return 2
	}
	id, err := strconv.ParseUint(fs.Arg(0), 10, 64)
	if err != nil {
		fmt.Fprintf(stderr, "skiff close: %q is not a connection ID\n", fs.Arg(0))
		return 2
	}
	ctx, c, done := callService(client, 10*time.Second)
	defer done()
	if err := c.CloseConnection(ctx, id); err != nil {
		return failed(stderr, "close", err)
	}
	fmt.Fprintf(stdout, "closed connection %d\n", id)
	return 0
}

func runWatch(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("watch", stderr)
	client := clientFlags(fs)
	var o api.WatchOptions
	fs.BoolVar(&o.Stats, "stats", false, "also the traffic once a second")
	fs.BoolVar(&o.Logs, "logs", false, "also the log records")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	c := client()
	defer c.Close()
	ch, err := c.Watch(ctx, o)
	if err != nil {
		return failed(stderr, "watch", err)
	}
	enc := json.NewEncoder(stdout)
	for n := range ch {
		if err := enc.Encode(n); err != nil {
			return 1
		}
	}
	if ctx.Err() != nil {
		return 0
	}
	fmt.Fprintln(stderr, "skiff watch: the service closed the stream")
	return 3
}

func runProbe(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("probe", stderr)
	client := clientFlags(fs)
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, c, done := callService(client, 2*time.Minute)
	defer done()
	ids := fs.Args()
	if len(ids) == 0 {
		p, _, err := c.Profile(ctx)
		if err != nil {
			return failed(stderr, "probe", err)
		}
		for _, n := range p.Nodes {
			if n.Unsupported == "" {
				ids = append(ids, n.ID)
			}
		}
	}
	res, err := c.Probe(ctx, ids)
	if err != nil {
		return failed(stderr, "probe", err)
	}
	for _, r := range res {
		switch {
		case r.Error != nil:
			fmt.Fprintf(stdout, "%s\tfailed (%s): %s\n", r.ID, r.Error.Code, r.Error.Message)
		default:
			fmt.Fprintf(stdout, "%s\t%d ms\n", r.ID, r.Latency.Milliseconds())
		}
	}
	return 0
}
