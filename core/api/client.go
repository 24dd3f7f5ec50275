package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/stats"
)

// Client is the Backend that talks to `skiff service` over its local
// socket. It holds no state of the core: every call asks the service.
type Client struct {
	hc   *http.Client
	dial func(ctx context.Context) (net.Conn, error)
}

// NewClient returns a Client that reaches the service with dial (see Dial
// for the platform's socket).
func NewClient(dial func(ctx context.Context) (net.Conn, error)) *Client {
	tr := &http.Transport{
		DialContext:            func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
		MaxIdleConns:           4,
		IdleConnTimeout:        30 * time.Second,
		DisableCompression:     true,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &Client{hc: &http.Client{Transport: tr}, dial: dial}
}

// Close drops the client's idle connections.
func (c *Client) Close() { c.hc.CloseIdleConnections() }

// base is the URL every request goes to; the host is never resolved (the
// transport dials the socket).
const base = "http://skiff/" + Version + "/"

// maxResponse bounds a response body (a profile is the largest).
const maxResponse = 64 << 20

// do sends a request with in as its JSON body (nil: none) and decodes the
// answer into out (nil: none).
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return errorf(CodeBadRequest, err.Error())
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return unreachable(err)
	}
	defer resp.Body.Close()
	lr := io.LimitReader(resp.Body, maxResponse)
	if resp.StatusCode/100 != 2 {
		return readError(resp.StatusCode, lr, out)
	}
	if out == nil || resp.StatusCode == http.StatusNoContent {
		io.Copy(io.Discard, lr)
		return nil
	}
	if err := json.NewDecoder(lr).Decode(out); err != nil {
		return fmt.Errorf("api: %s %s: reading the answer: %w", method, path, err)
	}
	return nil
}

// readError decodes an error answer. An import's answer also carries its
// result, decoded into out.
func readError(status int, r io.Reader, out any) error {
	b, _ := io.ReadAll(r)
	var e struct {
		Error
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Code == "" {
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("service answered %d", status)}
	}
	if len(e.Result) > 0 && out != nil {
		json.Unmarshal(e.Result, out)
	}
	return &e.Error
}

// unreachable wraps a transport error as CodeUnavailable.
func unreachable(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeUnavailable, Message: "the Skiff service cannot be reached: " + err.Error()}
}

// Connect implements Backend.
func (c *Client) Connect(ctx context.Context, r plan.Request) (*Route, error) {
	var rt Route
	if err := c.do(ctx, http.MethodPost, "connect", r, &rt); err != nil {
		return nil, err
	}
	return &rt, nil
}

// Disconnect implements Backend.
func (c *Client) Disconnect(ctx context.Context) error {
	return c.do(ctx, http.MethodPost, "disconnect", struct{}{}, nil)
}

// Status implements Backend.
func (c *Client) Status(ctx context.Context) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodGet, "status", nil, &st)
	return st, err
}

// Stats implements Backend.
func (c *Client) Stats(ctx context.Context) (core.Snapshot, error) {
	var s core.Snapshot
	err := c.do(ctx, http.MethodGet, "stats", nil, &s)
	return s, err
}

// Groups implements Backend.
func (c *Client) Groups(ctx context.Context) ([]core.GroupState, error) {
	var g []core.GroupState
	err := c.do(ctx, http.MethodGet, "groups", nil, &g)
	return g, err
}

// Connections implements Backend.
func (c *Client) Connections(ctx context.Context) ([]stats.ConnInfo, error) {
	var cs []stats.ConnInfo
	err := c.do(ctx, http.MethodGet, "connections", nil, &cs)
	return cs, err
}

// CloseConnection implements Backend.
func (c *Client) CloseConnection(ctx context.Context, id uint64) error {
	return c.do(ctx, http.MethodDelete, "connections/"+strconv.FormatUint(id, 10), nil, nil)
}

// Logs implements Backend.
func (c *Client) Logs(ctx context.Context) ([]core.LogRecord, error) {
	var l []core.LogRecord
	err := c.do(ctx, http.MethodGet, "logs", nil, &l)
	return l, err
}

// maxNotice bounds one line of a stream.
const maxNotice = 4 << 20

// Watch implements Backend. The stream is one long-lived request; the
// channel closes when ctx ends or the service goes away.
func (c *Client) Watch(ctx context.Context, o WatchOptions) (<-chan Notice, error) {
	q := url.Values{}
	if o.Stats {
		q.Set("stats", "1")
	}
	if o.Logs {
		q.Set("logs", "1")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"watch?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, unreachable(err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		return nil, readError(resp.StatusCode, io.LimitReader(resp.Body, maxRequest), nil)
	}
	out := make(chan Notice, watchBuffer)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), maxNotice)
		for sc.Scan() {
			var n Notice
			if err := json.Unmarshal(sc.Bytes(), &n); err != nil {
				continue
			}
			select {
			case out <- n:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Profile implements Backend.
func (c *Client) Profile(ctx context.Context) (*profile.Profile, string, error) {
	var doc profileDoc
	if err := c.do(ctx, http.MethodGet, "profile", nil, &doc); err != nil {
		return nil, "", err
	}
	if doc.Profile == nil {
		return nil, "", errorf(CodeInternal, "service sent no profile")
	}
	return doc.Profile, doc.Rev, nil
}

// SetProfile implements Backend.
func (c *Client) SetProfile(ctx context.Context, p *profile.Profile, rev string) error {
	return c.do(ctx, http.MethodPut, "profile", profileDoc{Profile: p, Rev: rev}, nil)
}

// Import implements Backend.
func (c *Client) Import(ctx context.Context, r ImportRequest) (*ImportResult, error) {
	var res ImportResult
	err := c.do(ctx, http.MethodPost, "import", r, &res)
	return &res, err
}

// Refresh implements Backend.
func (c *Client) Refresh(ctx context.Context, id string) (*ImportResult, error) {
	var res ImportResult
	err := c.do(ctx, http.MethodPost, "refresh", refreshRequest{ID: id}, &res)
	return &res, err
}

// Probe implements Backend.
func (c *Client) Probe(ctx context.Context, ids []string) ([]ProbeResult, error) {
	var res []ProbeResult
	err := c.do(ctx, http.MethodPost, "probe", probeRequest{IDs: ids}, &res)
	return res, err
}

// RefreshRuleSets implements Backend.
func (c *Client) RefreshRuleSets(ctx context.Context, names []string) ([]core.RuleSetState, error) {
	var res []core.RuleSetState
	err := c.do(ctx, http.MethodPost, "rulesets/refresh", ruleSetsRequest{Names: names}, &res)
	return res, err
}

var (
	_ Backend = (*Client)(nil)
	_ Backend = (*Local)(nil)
)
