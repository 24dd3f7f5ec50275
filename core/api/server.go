package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/subscription"
)

// The wire: HTTP/1.1 over the service's local socket, JSON bodies, every
// path under /<Version>/. An error is a non-2xx status with an Error as the
// body. A stream (/v1/watch) is a 200 whose body is one Notice per line
// (NDJSON) for as long as the client reads.
//
//	GET    /v1/status                    Status
//	GET    /v1/stats                     core.Snapshot
//	GET    /v1/groups                    []core.GroupState
//	GET    /v1/connections               []stats.ConnInfo
//	DELETE /v1/connections/{id}          -
//	GET    /v1/logs                      []core.LogRecord
//	GET    /v1/exit?refresh=1            Exit
//	GET    /v1/watch?stats=1&logs=1      NDJSON of Notice
//	POST   /v1/connect       plan.Request      Route
//	POST   /v1/disconnect                -
//	GET    /v1/profile                   profileDoc
//	PUT    /v1/profile       profileDoc        -
//	POST   /v1/import        ImportRequest     ImportResult
//	POST   /v1/refresh       refreshRequest    ImportResult
//	POST   /v1/probe         probeRequest      []ProbeResult
//	POST   /v1/select        SelectRequest     SelectResult
//	POST   /v1/mode          ModeRequest       ModeResult
//	POST   /v1/routing       RoutingRequest    RoutingResult
//	POST   /v1/rulesets/refresh  ruleSetsRequest  []core.RuleSetState

// Body limits: most requests are a few hundred bytes; an import carries a
// subscription body (up to subscription.MaxBodySize, JSON-escaped); a
// profile the whole saved document. (See limits.go for the bounds across
// requests.)
const (
	maxRequest       = 64 << 10
	maxImportRequest = 2*subscription.MaxBodySize + 64<<10
	maxProfile       = 32 << 20
)

// bodyLimit is the largest body route takes.
func bodyLimit(route string) int64 {
	switch route {
	case "PUT profile":
		return maxProfile
	case "POST import":
		return maxImportRequest
	case "POST probe":
		return maxRequest + maxProbe*64
	}
	return maxRequest
}

// profileDoc is the profile with its revision.
type profileDoc struct {
	Profile *profile.Profile `json:"profile"`
	Rev     string           `json:"rev,omitempty"`
}

type refreshRequest struct {
	ID string `json:"id"`
}

type probeRequest struct {
	IDs []string `json:"ids"`
}

type ruleSetsRequest struct {
	Names []string `json:"names,omitempty"` // none: every rule set with a URL
}

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Authorize, when set, is asked about every request before anything
	// is read; an error refuses it (as CodeForbidden, with its text).
	Authorize func(*http.Request) error
	// Peer, when set, names the caller (its uid) for the per-peer bounds;
	// nil: every caller is one peer.
	Peer   func(*http.Request) string
	Logger *slog.Logger
}

// Handler serves a Backend over HTTP. Create it with NewHandler.
type Handler struct {
	b        Backend
	o        HandlerOptions
	bodies   *byteBudget
	watchers watchSlots

	// The bounds of limits.go, which tests shorten.
	bodyTimeout, watchWriteTimeout time.Duration
	maxWatchers, maxPeerWatchers   int
}

// NewHandler returns the API's HTTP handler over b.
func NewHandler(b Backend, o HandlerOptions) *Handler {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{
		b: b, o: o, bodies: newByteBudget(maxInFlight),
		bodyTimeout: bodyTimeout, watchWriteTimeout: watchWriteTimeout,
		maxWatchers: maxWatchers, maxPeerWatchers: maxPeerWatchers,
	}
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.o.Authorize != nil {
		if err := h.o.Authorize(r); err != nil {
			h.o.Logger.Warn("api: refused", "err", err)
			writeError(w, errorf(CodeForbidden, err.Error()))
			return
		}
	}
	version, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	if version != Version {
		if len(version) > 1 && version[0] == 'v' {
			writeError(w, errorf(CodeUnsupportedVersion, fmt.Sprintf("API version %q is not served; this service speaks %s", version, Version)))
			return
		}
		writeError(w, errorf(CodeNotFound, "no such path"))
		return
	}
	ctx := r.Context()
	route := r.Method + " " + rest
	limit := bodyLimit(route)
	release, ok := h.admitBody(w, r, limit)
	if !ok {
		return
	}
	defer release()
	if id, ok := strings.CutPrefix(rest, "connections/"); ok && r.Method == http.MethodDelete {
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil {
			writeError(w, errorf(CodeBadRequest, "connection id: not a number"))
			return
		}
		reply(w, nil, h.b.CloseConnection(ctx, n))
		return
	}
	switch route {
	case "GET status":
		get(ctx, w, h.b.Status)
	case "GET stats":
		get(ctx, w, h.b.Stats)
	case "GET groups":
		get(ctx, w, h.b.Groups)
	case "GET connections":
		get(ctx, w, h.b.Connections)
	case "GET logs":
		get(ctx, w, h.b.Logs)
	case "GET exit":
		refresh := r.URL.Query().Get("refresh") == "1"
		get(ctx, w, func(ctx context.Context) (*Exit, error) { return h.b.Exit(ctx, refresh) })
	case "GET watch":
		h.watch(w, r)
	case "POST connect":
		post(ctx, w, r, limit, h.b.Connect)
	case "POST disconnect":
		if decode(w, r, limit, nil) {
			reply(w, nil, h.b.Disconnect(ctx))
		}
	case "GET profile":
		p, rev, err := h.b.Profile(ctx)
		reply(w, profileDoc{Profile: p, Rev: rev}, err)
	case "PUT profile":
		var doc profileDoc
		if decode(w, r, limit, &doc) {
			reply(w, nil, h.b.SetProfile(ctx, doc.Profile, doc.Rev))
		}
	case "POST import":
		post(ctx, w, r, limit, h.b.Import)
	case "POST refresh":
		post(ctx, w, r, limit, func(ctx context.Context, req refreshRequest) (*ImportResult, error) {
			return h.b.Refresh(ctx, req.ID)
		})
	case "POST probe":
		post(ctx, w, r, limit, func(ctx context.Context, req probeRequest) ([]ProbeResult, error) {
			return h.b.Probe(ctx, req.IDs)
		})
	case "POST mode":
		post(ctx, w, r, limit, h.b.SetMode)
	case "POST select":
		post(ctx, w, r, limit, h.b.Select)
	case "POST routing":
		post(ctx, w, r, limit, h.b.SetRouting)
	case "POST rulesets/refresh":
		post(ctx, w, r, limit, func(ctx context.Context, req ruleSetsRequest) ([]core.RuleSetState, error) {
			return h.b.RefreshRuleSets(ctx, req.Names)
		})
	default:
		writeError(w, errorf(CodeNotFound, "no such path: "+r.Method+" /"+Version+"/"+rest))
	}
}

// admitBody takes r's share of the bytes in flight (its length, or limit
// when it does not say, cut to what came once it is read) and starts its
// read deadline (decode ends it once the body is read); release gives the
// bytes back. A body announced over limit is refused (413) before it is
// read. GET and DELETE read no body, and take no share.
func (h *Handler) admitBody(w http.ResponseWriter, r *http.Request, limit int64) (release func(), ok bool) {
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close") // the body is never read
		writeError(w, errorf(CodeTooLarge, fmt.Sprintf("request body of %d bytes, over %d", r.ContentLength, limit)))
		return nil, false
	}
	n := r.ContentLength
	if n < 0 {
		n = limit
	}
	if n == 0 || r.Method == http.MethodGet || r.Method == http.MethodDelete {
		return func() {}, true
	}
	ctx, cancel := context.WithTimeout(r.Context(), h.bodyTimeout)
	defer cancel()
	if err := h.bodies.acquire(ctx, n); err != nil {
		w.Header().Set("Connection", "close")
		writeError(w, errorf(CodeUnavailable, "the service is busy reading other requests; try again"))
		return nil, false
	}
	http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.bodyTimeout))
	share := &bodyShare{ReadCloser: r.Body, b: h.bodies, held: n}
	r.Body = share
	return share.release, true
}

// watch streams notices as NDJSON until the client goes away, or takes
// longer than watchWriteTimeout to take one.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request) {
	peer := ""
	if h.o.Peer != nil {
		peer = h.o.Peer(r)
	}
	if ok, why := h.watchers.take(peer, h.maxWatchers, h.maxPeerWatchers); !ok {
		writeError(w, errorf(CodeUnavailable, why))
		return
	}
	defer h.watchers.put(peer)
	q := r.URL.Query()
	o := WatchOptions{Stats: q.Get("stats") == "1", Logs: q.Get("logs") == "1"}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	ch, err := h.b.Watch(ctx, o)
	if err != nil {
		writeError(w, Wrap(err))
		return
	}
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	enc := json.NewEncoder(w)
	for n := range ch {
		if err := rc.SetWriteDeadline(time.Now().Add(h.watchWriteTimeout)); err != nil {
			h.o.Logger.Debug("api: watch: no write deadline", "err", err)
		}
		if err := enc.Encode(n); err != nil {
			return // the client hung up; cancel ends the watch
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// DecodeRequest reads one JSON value of at most limit bytes from body into
// v, refusing unknown fields and trailing data. It is what every request
// body goes through (and what FuzzDecodeRequest fuzzes).
func DecodeRequest(body io.Reader, limit int64, v any) error {
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return errorf(CodeTooLarge, fmt.Sprintf("request body over %d bytes", mbe.Limit))
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return errorf(CodeBadRequest, "the request body did not arrive in time")
		}
		return errorf(CodeBadRequest, "reading the request: "+err.Error())
	}
	if int64(len(b)) > limit {
		return errorf(CodeTooLarge, fmt.Sprintf("request body over %d bytes", limit))
	}
	if v == nil {
		if len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "{}" {
			return nil
		}
		return errorf(CodeBadRequest, "this request takes no body")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errorf(CodeBadRequest, "malformed request: "+err.Error())
	}
	if dec.More() {
		return errorf(CodeBadRequest, "malformed request: data after the JSON value")
	}
	return nil
}

// decode reads r's body into v (see DecodeRequest), answering the error
// itself; it reports whether to go on.
func decode(w http.ResponseWriter, r *http.Request, limit int64, v any) bool {
	body := http.MaxBytesReader(w, r.Body, limit)
	if err := DecodeRequest(body, limit, v); err != nil {
		// The rest of a body that failed is not read (the server would
		// wait for a trickled one without a deadline): the connection ends.
		w.Header().Set("Connection", "close")
		writeError(w, err)
		return false
	}
	// Read whole: no deadline while the request runs (the server's
	// watch for a hang-up would take one for the client leaving).
	http.NewResponseController(w).SetReadDeadline(time.Time{})
	return true
}

// get writes what f returns.
func get[Res any](ctx context.Context, w http.ResponseWriter, f func(context.Context) (Res, error)) {
	res, err := f(ctx)
	reply(w, res, err)
}

// post decodes r's body into a Req, calls f with it and writes what f
// returns.
func post[Req, Res any](ctx context.Context, w http.ResponseWriter, r *http.Request, limit int64, f func(context.Context, Req) (Res, error)) {
	var req Req
	if decode(w, r, limit, &req) {
		res, err := f(ctx, req)
		reply(w, res, err)
	}
}

// reply writes v as JSON, or err. A failed import still has a result
// (with its Error), written beside the error: the client turns it back
// into the error.
func reply(w http.ResponseWriter, v any, err error) {
	if res, ok := v.(*ImportResult); ok && err != nil && res != nil && res.Error != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(statusOf(res.Error.Code))
		json.NewEncoder(w).Encode(struct {
			*Error
			Result *ImportResult `json:"result"`
		}{res.Error, res})
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if v == nil {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	e := Wrap(err)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(statusOf(e.Code))
	json.NewEncoder(w).Encode(e)
}

// statusOf is the HTTP status an error code is sent with.
func statusOf(c Code) int {
	switch c {
	case CodeBadRequest:
		return http.StatusBadRequest
	case CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeForbidden:
		return http.StatusForbidden
	case CodeUnsupportedVersion, CodeNotFound:
		return http.StatusNotFound
	case CodeConflict, CodeRunning:
		return http.StatusConflict
	case CodeNoServer, CodeTUNPermission, CodePortInUse, CodeServerAuth:
		return http.StatusUnprocessableEntity
	case CodeSubscriptionFetch, CodeExitLookup:
		return http.StatusBadGateway
	case CodeNotConnected:
		return http.StatusConflict
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}
