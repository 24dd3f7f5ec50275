package cli

import (
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
)

func init() {
	commands["routing"] = command{"show or set how flows are routed: rule (the routes), global (all through the proxy) or direct", runRouting}
}

// runRouting implements `skiff routing` (the routing shown: the running
// one, else the saved one) and `skiff routing rule|global|direct` (saved,
// and applied at once to new flows when connected).
func runRouting(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("routing", stderr, "usage: skiff routing [flags] [rule|global|direct]")
	client := clientFlags(fs)
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			return 0
		}
		return 2
	}
	if fs.NArg() > 1 {
		fs.Usage()
		return 2
	}
	ctx, c, done := callService(client, 10*time.Second)
	defer done()
	if fs.NArg() == 0 {
		st, err := c.Status(ctx)
		if err != nil {
			return failed(stderr, "routing", err)
		}
		p, _, err := c.Profile(ctx)
		if err != nil {
			return failed(stderr, "routing", err)
		}
		fmt.Fprintln(stdout, api.RoutingOf(st, p))
		return 0
	}
	m, err := core.ParseRouting(fs.Arg(0))
	if err != nil || fs.Arg(0) == "" {
		fmt.Fprintf(stderr, "skiff routing: %q: want rule, global or direct\n", fs.Arg(0))
		return 2
	}
	res, err := c.SetRouting(ctx, api.RoutingRequest{Routing: string(m)})
	if err != nil {
		return failed(stderr, "routing", err)
	}
	if res.Live {
		fmt.Fprintf(stdout, "routing: %s (new connections follow it now; open ones stay)\n", m)
	} else {
		fmt.Fprintf(stdout, "routing: %s (saved for the next connection)\n", m)
	}
	return 0
}
