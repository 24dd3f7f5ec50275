package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/subscription"
)

// runImport implements `skiff import URL|FILE|-|LINK`: a subscription URL
// is added (or refreshed, when already present) and fetched; a file, stdin
// or a share link given directly is parsed and its nodes added.
func runImport(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dir := fs.String("config-dir", "", "profile directory (default: $"+profile.EnvConfigDir+" or the OS config dir)")
	name := fs.String("name", "", "name for a new subscription (default: the provider's title)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: skiff import [--config-dir DIR] [--name NAME] URL|FILE|-|LINK")
		fmt.Fprintln(stderr, "  URL may also be an ssconf://, clash://install-config or sing-box://import-remote-profile link")
		fmt.Fprintln(stderr, "  URL   an http(s) subscription URL: added to the profile and refreshed in the background")
		fmt.Fprintln(stderr, "  FILE  a file with share links, base64, Clash YAML, sing-box JSON or SIP008 JSON")
		fmt.Fprintln(stderr, "  -     the same, read from standard input")
		fmt.Fprintln(stderr, "  LINK  one share link (hysteria2://, vless://, …)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	arg := fs.Arg(0)
	store, err := profile.Open(*dir)
	if err != nil {
		fmt.Fprintf(stderr, "skiff import: %v\n", err)
		return 1
	}
	if _, err := store.Load(); err != nil {
		var cerr *profile.CorruptError
		if !errors.As(err, &cerr) {
			fmt.Fprintf(stderr, "skiff import: %v\n", err)
			return 1
		}
		fmt.Fprintf(stderr, "skiff import: warning: %v\n", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	if u, ok := subscription.NormalizeURL(arg); ok {
		return importURL(ctx, store, u, *name, stdout, stderr)
	}
	var body []byte
	source := arg
	switch {
	case arg == "-":
		source = "standard input"
		body, err = io.ReadAll(io.LimitReader(stdin, subscription.MaxBodySize+1))
	case strings.Contains(arg, "://"):
		source = "the link"
		body = []byte(arg)
	default:
		body, err = readFileLimited(arg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiff import: %v\n", err)
		return 1
	}
	res, perr := subscription.Parse(body)
	if perr != nil {
		printWarnings(stderr, res)
		fmt.Fprintf(stderr, "skiff import: %s: %v\n", source, perr)
		return 1
	}
	added := 0
	if err := store.Update(func(p *profile.Profile) error {
		added = subscription.AddNodes(p, res.Nodes)
		return nil
	}); err != nil {
		fmt.Fprintf(stderr, "skiff import: saving: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "imported %d nodes from %s (%s)", added, source, res.Format)
	if dup := len(res.Nodes) - added; dup > 0 {
		fmt.Fprintf(stdout, "; %d already present", dup)
	}
	fmt.Fprintln(stdout)
	printUnsupported(stdout, res)
	printWarnings(stderr, res)
	return 0
}

func readFileLimited(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, subscription.MaxBodySize+1)); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// importURL adds a subscription (or finds it by URL) and refreshes it. A new
// subscription whose first refresh fails is removed again.
func importURL(ctx context.Context, store *profile.Store, rawURL, name string, stdout, stderr io.Writer) int {
	var id string
	isNew := false
	err := store.Update(func(p *profile.Profile) error {
		for _, s := range p.Subscriptions {
			if s.URL == rawURL {
				id = s.ID
				if name != "" {
					s.Name = name
				}
				return nil
			}
		}
		var b [6]byte
		rand.Read(b[:])
		id = "s" + hex.EncodeToString(b[:])
		isNew = true
		p.Subscriptions = append(p.Subscriptions, &profile.Subscription{ID: id, URL: rawURL, Name: name})
		return nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "skiff import: saving: %v\n", err)
		return 1
	}
	res, rerr := subscription.Refresh(ctx, store, &subscription.Fetcher{}, id)
	if rerr != nil {
		printWarnings(stderr, res)
		if isNew {
			store.Update(func(p *profile.Profile) error {
				subs := p.Subscriptions[:0]
				for _, s := range p.Subscriptions {
					if s.ID != id {
						subs = append(subs, s)
					}
				}
				p.Subscriptions = subs
				return nil
			})
			fmt.Fprintf(stderr, "skiff import: %v\n", rerr)
		} else {
			fmt.Fprintf(stderr, "skiff import: %v (the subscription's previous nodes are kept)\n", rerr)
		}
		return 1
	}
	p, _ := store.Load()
	var sub *profile.Subscription
	if p != nil {
		sub = p.Subscription(id)
	}
	title := subscription.Redact(rawURL)
	if sub != nil && sub.DisplayName() != "" {
		title = sub.DisplayName()
	}
	verb := "added"
	if !isNew {
		verb = "refreshed"
	}
	fmt.Fprintf(stdout, "%s subscription %q (%s): %d nodes\n", verb, title, res.Format, len(res.Nodes))
	printUnsupported(stdout, res)
	if sub != nil {
		if ui := sub.UserInfo; ui != nil {
			fmt.Fprintf(stdout, "traffic: %s", describeTraffic(ui))
			fmt.Fprintln(stdout)
		}
		if sub.WebPageURL != "" {
			fmt.Fprintf(stdout, "provider page: %s\n", sub.WebPageURL)
		}
		fmt.Fprintf(stdout, "refreshes every %s\n", subscription.Interval(p, sub))
	}
	printWarnings(stderr, res)
	return 0
}

func describeTraffic(ui *profile.UserInfo) string {
	used := ui.Upload + ui.Download
	s := bytesIEC(used) + " used"
	if ui.Total > 0 {
		s += " of " + bytesIEC(ui.Total) + ", " + bytesIEC(ui.Remaining()) + " left"
	}
	if !ui.Expire.IsZero() {
		s += ", expires " + ui.Expire.Local().Format(time.DateOnly)
	}
	return s
}

func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func printUnsupported(w io.Writer, res *subscription.Result) {
	if res == nil {
		return
	}
	var lines []string
	for _, n := range res.Nodes {
		if ok, why := subscription.Supported(n); !ok {
			lines = append(lines, fmt.Sprintf("  %s: %s", n.Name, why))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "%d of them are kept but cannot be used yet:\n%s\n", len(lines), strings.Join(lines, "\n"))
}

func printWarnings(w io.Writer, res *subscription.Result) {
	if res == nil || len(res.Warnings) == 0 {
		return
	}
	fmt.Fprintf(w, "skipped %d entries:\n", len(res.Warnings))
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "  %s\n", wn)
	}
}
