package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/app/qr"
	"github.com/skiffvpn/skiff/app/service"
	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/subscription"
)

// runImport implements `skiff import URL|FILE|-|LINK`: a subscription URL
// is added (or refreshed, when already present) and fetched; a file, stdin
// or a share link given directly is parsed and its nodes added.
func runImport(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := newFlags("import", stderr,
		"usage: skiff import [--config-dir DIR] [--name NAME] [--qr] URL|FILE|-|LINK",
		"  URL may also be an ssconf://, clash://install-config or sing-box://import-remote-profile link",
		"  URL   an http(s) subscription URL: added to the profile and refreshed in the background",
		"  FILE  a file with share links, base64, Clash YAML, sing-box JSON or SIP008 JSON",
		"  -     the same, read from standard input",
		"  LINK  one share link (hysteria2://, vless://, …)")
	backend := backendFlags(fs)
	name := fs.String("name", "", "name for a new subscription (default: the provider's title)")
	fromQR := fs.Bool("qr", false, "the argument is a PNG, JPEG or GIF image of a QR code: import the link or URL it holds")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	arg := fs.Arg(0)
	if *fromQR {
		text, err := qrText(arg)
		if err != nil {
			fmt.Fprintf(stderr, "skiff import: %v\n", err)
			return 1
		}
		arg = text
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	b, done, err := backend(ctx, stderr)
	if err != nil {
		return failed(stderr, "import", err)
	}
	defer done()

	if u, ok := subscription.NormalizeURL(arg); ok {
		return importURL(ctx, b, u, *name, stdout, stderr)
	}
	var body []byte
	source, file := arg, ""
	switch {
	case arg == "-":
		source = "standard input"
		body, err = io.ReadAll(io.LimitReader(stdin, subscription.MaxBodySize+1))
	case strings.Contains(arg, "://"):
		source = "the link"
		body = []byte(arg)
	default:
		// A file is listed as a subscription of its name.
		file = filepath.Base(arg)
		body, err = readFileLimited(arg)
	}
	if err != nil {
		fmt.Fprintf(stderr, "skiff import: %v\n", err)
		return 1
	}
	if len(body) > subscription.MaxBodySize {
		fmt.Fprintf(stderr, "skiff import: %s: over %d bytes\n", source, subscription.MaxBodySize)
		return 1
	}
	res, err := b.Import(ctx, api.ImportRequest{Body: string(body), Source: file})
	if err != nil {
		printWarnings(stderr, res)
		msg := err.Error()
		msg = strings.TrimPrefix(msg, "import: ")
		fmt.Fprintf(stderr, "skiff import: %s: %s\n", source, msg)
		return 1
	}
	fmt.Fprintf(stdout, "imported %d nodes from %s (%s)", res.Added, source, res.Format)
	if file != "" {
		fmt.Fprintf(stdout, " as subscription %q", file)
	}
	if dup := res.Nodes - res.Added; dup > 0 {
		fmt.Fprintf(stdout, "; %d already present", dup)
	}
	fmt.Fprintln(stdout)
	printUnsupported(stdout, res)
	printWarnings(stderr, res)
	return 0
}

// backendFlags adds --config-dir and --socket to fs and returns what opens
// the backend they name (backendFor).
func backendFlags(fs *flag.FlagSet) func(ctx context.Context, stderr io.Writer) (api.Backend, func(), error) {
	dir := fs.String("config-dir", "", "profile directory (default: $"+profile.EnvConfigDir+" or the OS config dir)")
	socket := fs.String("socket", service.DefaultSocket, "the service's socket, used when no --config-dir is given and the service runs")
	return func(ctx context.Context, stderr io.Writer) (api.Backend, func(), error) {
		return backendFor(ctx, *dir, *socket, stderr)
	}
}

// backendFor returns the backend a data command works on: with --config-dir
// (or $SKIFF_CONFIG_DIR) that profile, in this process; else the service
// when one runs, else the user's own profile in this process.
func backendFor(ctx context.Context, dir, socket string, stderr io.Writer) (api.Backend, func(), error) {
	if dir == "" && os.Getenv(profile.EnvConfigDir) == "" {
		c := service.NewClient(socket)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := c.Status(cctx)
		cancel()
		switch {
		case err == nil:
			return c, c.Close, nil
		case !errors.Is(err, api.ErrUnavailable):
			c.Close()
			return nil, nil, err
		}
		c.Close()
	}
	store, err := profile.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	if _, err := store.Load(); err != nil {
		var cerr *profile.CorruptError
		if !errors.As(err, &cerr) {
			return nil, nil, err
		}
		fmt.Fprintf(stderr, "skiff: warning: %v\n", err)
	}
	l := api.NewLocal(core.NewController(core.Options{LogOutput: io.Discard}), store, nil)
	return l, func() { l.Close() }, nil
}

// qrText is the text of the QR code in the image file at path: what is
// imported, as if it had been given on the command line.
func qrText(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	text, err := qr.Decode(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	text = strings.TrimSpace(text)
	if text == "-" || !strings.Contains(text, "://") {
		// Not a link or URL: a file name read from a picture is not opened.
		return "", fmt.Errorf("%s: the QR code holds no link or subscription URL", path)
	}
	return text, nil
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
// subscription whose first refresh fails is not kept.
func importURL(ctx context.Context, b api.Backend, rawURL, name string, stdout, stderr io.Writer) int {
	res, rerr := b.Import(ctx, api.ImportRequest{URL: rawURL, Name: name})
	if rerr != nil {
		printWarnings(stderr, res)
		if res != nil && res.Existing {
			fmt.Fprintf(stderr, "skiff import: %v (the subscription's previous nodes are kept)\n", rerr)
		} else {
			fmt.Fprintf(stderr, "skiff import: %v\n", rerr)
		}
		return 1
	}
	p, _, _ := b.Profile(ctx)
	var sub *profile.Subscription
	if p != nil {
		sub = p.Subscription(res.Subscription)
	}
	title := subscription.Redact(rawURL)
	if sub != nil && sub.DisplayName() != "" {
		title = sub.DisplayName()
	}
	verb := "added"
	if res.Existing {
		verb = "refreshed"
	}
	fmt.Fprintf(stdout, "%s subscription %q (%s): %d nodes\n", verb, title, res.Format, res.Nodes)
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

func printUnsupported(w io.Writer, res *api.ImportResult) {
	if res == nil || len(res.Unsupported) == 0 {
		return
	}
	fmt.Fprintf(w, "%d of them are kept but cannot be used yet:\n  %s\n", len(res.Unsupported), strings.Join(res.Unsupported, "\n  "))
}

func printWarnings(w io.Writer, res *api.ImportResult) {
	if res == nil || len(res.Warnings) == 0 {
		return
	}
	fmt.Fprintf(w, "skipped %d entries:\n", len(res.Warnings))
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "  %s\n", wn)
	}
}
