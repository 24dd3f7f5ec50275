package xhttp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Range is an inclusive range of integers, as Xray's xhttpSettings write
// them: a number, "from-to", or {"from": a, "to": b}.
type Range struct{ From, To int }

// IsZero reports whether r is unset.
func (r Range) IsZero() bool { return r == Range{} }

func (r Range) String() string {
	if r.From == r.To {
		return strconv.Itoa(r.From)
	}
	return strconv.Itoa(r.From) + "-" + strconv.Itoa(r.To)
}

// ParseRange reads "n" or "from-to".
func ParseRange(s string) (Range, error) {
	a, b, ok := strings.Cut(strings.TrimSpace(s), "-")
	from, err := strconv.Atoi(strings.TrimSpace(a))
	if err != nil {
		return Range{}, fmt.Errorf("bad range %q", s)
	}
	to := from
	if ok {
		if to, err = strconv.Atoi(strings.TrimSpace(b)); err != nil {
			return Range{}, fmt.Errorf("bad range %q", s)
		}
	}
	r := Range{from, to}
	if from < 0 || to < from {
		return Range{}, fmt.Errorf("bad range %q", s)
	}
	return r, nil
}

func (r *Range) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		v, err := ParseRange(s)
		if err != nil {
			return err
		}
		*r = v
		return nil
	case len(b) > 0 && b[0] == '{':
		var o struct{ From, To int }
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		if o.From < 0 || o.To < o.From {
			return fmt.Errorf("bad range %d-%d", o.From, o.To)
		}
		*r = Range{o.From, o.To}
		return nil
	}
	var n int
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("bad range %s", b)
	}
	if n < 0 {
		return fmt.Errorf("bad range %d", n)
	}
	*r = Range{n, n}
	return nil
}

// Extra is what Skiff reads from a link's extra= (Xray's xhttpSettings as
// JSON). Settings only a server reads (noSSEHeader, scMaxBufferedPosts,
// scStreamUpServerSecs) and unknown keys are ignored, as Xray does; the
// ones that would change what the client sends and that Skiff does not do
// are refused with an *UnsupportedError.
type Extra struct {
	Host             string
	Path             string
	Mode             Mode
	Headers          map[string]string
	Padding          Range // xPaddingBytes
	NoGRPCHeader     bool
	MaxEachPost      Range // scMaxEachPostBytes
	MinPostsInterval Range // scMinPostsIntervalMs
	MaxConnections   Range // xmux.maxConnections
}

// UnsupportedError is an extra setting the client cannot honour.
type UnsupportedError struct {
	Key, Value string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("xhttp: extra %s=%s is not supported yet", e.Key, e.Value)
}

// Bounds on what extra may ask for. Padding goes in one request header,
// which Xray's server limits (with the rest) to 8 KiB on HTTP/1.1.
const (
	maxPadding     = 8000
	maxPostSize    = 16 << 20
	maxInterval    = 10_000 // ms
	maxConnections = 64
)

// ParseExtra reads extra, a JSON object (empty: none).
func ParseExtra(extra string) (*Extra, error) {
	e := &Extra{}
	if strings.TrimSpace(extra) == "" {
		return e, nil
	}
	var raw struct {
		Host                 string            `json:"host"`
		Path                 string            `json:"path"`
		Mode                 string            `json:"mode"`
		Headers              map[string]string `json:"headers"`
		XPaddingBytes        *Range            `json:"xPaddingBytes"`
		NoGRPCHeader         bool              `json:"noGRPCHeader"`
		ScMaxEachPostBytes   *Range            `json:"scMaxEachPostBytes"`
		ScMinPostsIntervalMs *Range            `json:"scMinPostsIntervalMs"`
		DownloadSettings     json.RawMessage   `json:"downloadSettings"`
		XPaddingObfsMode     bool              `json:"xPaddingObfsMode"`
		UplinkHTTPMethod     string            `json:"uplinkHTTPMethod"`
		SessionPlacement     string            `json:"sessionPlacement"`
		SessionIDPlacement   string            `json:"sessionIDPlacement"`
		SeqPlacement         string            `json:"seqPlacement"`
		UplinkDataPlacement  string            `json:"uplinkDataPlacement"`
		Xmux                 struct {
			MaxConnections *Range `json:"maxConnections"`
		} `json:"xmux"`
	}
	dec := json.NewDecoder(strings.NewReader(extra))
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("xhttp: extra: %w", err)
	}
	if dec.More() {
		return nil, errors.New("xhttp: extra: data after the JSON object")
	}
	if d := bytes.TrimSpace(raw.DownloadSettings); len(d) > 0 && !bytes.Equal(d, []byte("null")) {
		return nil, &UnsupportedError{"downloadSettings", "(a separate download server)"}
	}
	if raw.XPaddingObfsMode {
		return nil, &UnsupportedError{"xPaddingObfsMode", "true"}
	}
	if m := raw.UplinkHTTPMethod; m != "" && !strings.EqualFold(m, "POST") {
		return nil, &UnsupportedError{"uplinkHTTPMethod", m}
	}
	for _, p := range []struct{ key, v, want string }{
		{"sessionPlacement", raw.SessionPlacement, "path"},
		{"sessionIDPlacement", raw.SessionIDPlacement, "path"},
		{"seqPlacement", raw.SeqPlacement, "path"},
		{"uplinkDataPlacement", raw.UplinkDataPlacement, "body"},
	} {
		if p.v != "" && p.v != p.want {
			return nil, &UnsupportedError{p.key, p.v}
		}
	}
	if raw.Mode != "" {
		m, err := ParseMode(raw.Mode)
		if err != nil {
			return nil, fmt.Errorf("xhttp: extra: %w", err)
		}
		e.Mode = m
	}
	e.Host, e.Path, e.Headers, e.NoGRPCHeader = raw.Host, raw.Path, raw.Headers, raw.NoGRPCHeader
	for _, r := range []struct {
		key string
		in  *Range
		out *Range
		max int
	}{
		{"xPaddingBytes", raw.XPaddingBytes, &e.Padding, maxPadding},
		{"scMaxEachPostBytes", raw.ScMaxEachPostBytes, &e.MaxEachPost, maxPostSize},
		{"scMinPostsIntervalMs", raw.ScMinPostsIntervalMs, &e.MinPostsInterval, maxInterval},
		{"xmux.maxConnections", raw.Xmux.MaxConnections, &e.MaxConnections, maxConnections},
	} {
		if r.in == nil {
			continue
		}
		if r.in.To > r.max {
			return nil, fmt.Errorf("xhttp: extra: %s %s: at most %d", r.key, r.in, r.max)
		}
		*r.out = *r.in
	}
	if e.Padding.To == 0 {
		e.Padding = Range{} // Xray: a range ending at 0 is the default
	}
	if !e.MaxEachPost.IsZero() && e.MaxEachPost.From == 0 {
		return nil, fmt.Errorf("xhttp: extra: scMaxEachPostBytes %s: posts must carry a byte", e.MaxEachPost)
	}
	return e, nil
}

// ParseMode reads a mode name; "" is Auto.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "", Auto:
		return Auto, nil
	case PacketUp, StreamUp, StreamOne:
		return m, nil
	}
	return "", fmt.Errorf("unknown mode %q (want auto, packet-up, stream-up or stream-one)", s)
}
