package xhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Buffers per stream: the download read ahead of Conn.Read (the HTTP
// transport's own stream window holds more), and the upload waiting for
// its request (one POST's worth in packet-up, so that POSTs go out full).
// A download buffer above keepCap halved 16-stream download throughput
// (3703 -> 1899 Mbit/s, cmd/xhttpbench): drained, it was dropped and
// regrown for every few reads.
const (
	downBuffer = keepCap
	readChunk  = 32 << 10
)

// maxInflightPosts bounds packet-up's concurrent POSTs of one stream: the
// server reorders by seq and buffers 30 at most.
const maxInflightPosts = 4

var errClosed = net.ErrClosed

// Dial opens one stream: it sends the download request (GET, or the
// stream-one POST) and returns once the server answered its headers,
// bounded by ctx. The stream lives on after ctx, until Close.
func (c *Client) Dial(ctx context.Context) (net.Conn, error) {
	cctx, cancel := context.WithCancel(context.Background())
	x := &conn{c: c, rt: c.pick(), ctx: cctx, cancel: cancel, down: newPipe(downBuffer)}
	upLimit := c.cfg.MaxEachPost.To
	if c.cfg.Mode != PacketUp {
		upLimit = readChunk * 2
	}
	x.up = newPipe(upLimit)
	stop := context.AfterFunc(ctx, cancel)
	var resp *http.Response
	var err error
	switch c.cfg.Mode {
	case StreamOne:
		req, rerr := c.request(cctx, http.MethodPost, c.base, upBody{x.up})
		if rerr != nil {
			cancel()
			return nil, rerr
		}
		c.streamHeaders(req)
		resp, err = c.do(x.rt, req)
	default:
		sid := newSessionID()
		x.url = c.base + sid
		if c.cfg.Mode == StreamUp {
			x.spawn(x.streamUp)
		} else {
			x.spawn(x.packetUp)
		}
		req, rerr := c.request(cctx, http.MethodGet, x.url, nil)
		if rerr != nil {
			x.Close()
			return nil, rerr
		}
		resp, err = c.do(x.rt, req)
	}
	if !stop() && err == nil {
		resp.Body.Close()
		err = ctx.Err()
	}
	if err != nil {
		if ctx.Err() != nil {
			err = errors.Join(ctx.Err(), err)
		}
		x.fail(err)
		x.Close()
		return nil, err
	}
	x.spawn(func() { x.pump(resp.Body) })
	return x, nil
}

// streamHeaders marks a streaming POST as gRPC, as Xray's client does,
// so that middleboxes that know gRPC stream it.
func (c *Client) streamHeaders(req *http.Request) {
	if !c.cfg.NoGRPCHeader {
		req.Header.Set("Content-Type", "application/grpc")
	}
}

// conn is one stream.
type conn struct {
	c      *Client
	rt     http.RoundTripper // all of the stream's requests
	ctx    context.Context   // the stream's requests; cancelled by Close and on failure
	cancel context.CancelFunc
	url    string // base/<session>; "" for stream-one
	up     *pipe  // Write -> request bodies
	down   *pipe  // response body -> Read
	wg     sync.WaitGroup
	once   sync.Once
}

func (x *conn) spawn(f func()) {
	x.wg.Add(1)
	go func() {
		defer x.wg.Done()
		f()
	}()
}

// fail ends the stream with err: Read returns what arrived, then err.
func (x *conn) fail(err error) {
	x.down.close(err)
	x.up.close(err)
	x.cancel()
}

// pump copies the download into x.down until it ends.
func (x *conn) pump(body io.ReadCloser) {
	defer body.Close()
	buf := make([]byte, readChunk)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := x.down.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				x.down.close(io.EOF)
			} else {
				x.fail(err)
			}
			return
		}
	}
}

// streamUp sends the upload as one streaming POST and drains what the
// server answers on it (X padding that keeps the POST alive).
func (x *conn) streamUp() {
	req, err := x.c.request(x.ctx, http.MethodPost, x.url, upBody{x.up})
	if err != nil {
		x.fail(err)
		return
	}
	x.c.streamHeaders(req)
	resp, err := x.c.do(x.rt, req)
	if err != nil {
		x.fail(err)
		return
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
}

// packetUp sends the upload as POSTs of what has gathered, numbered from
// 0, at most maxInflightPosts at a time and MinPostsInterval apart.
func (x *conn) packetUp() {
	slots := make(chan struct{}, maxInflightPosts)
	var last time.Time
	for seq := 0; ; seq++ {
		// Wait out the interval first: writes made meanwhile join this POST.
		if wait := time.Duration(x.c.cfg.MinPostsInterval.rand())*time.Millisecond - time.Since(last); wait > 0 && !last.IsZero() {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-x.ctx.Done():
				t.Stop()
				return
			}
		}
		data, err := x.up.take(x.c.cfg.MaxEachPost.rand())
		if err != nil {
			return
		}
		select {
		case slots <- struct{}{}:
		case <-x.ctx.Done():
			return
		}
		last = time.Now()
		x.spawn(func() {
			defer func() { <-slots }()
			if err := x.post(seq, data); err != nil {
				x.fail(err)
			}
		})
	}
}

func (x *conn) post(seq int, data []byte) error {
	req, err := x.c.request(x.ctx, http.MethodPost, x.url+"/"+strconv.Itoa(seq), nil)
	if err != nil {
		return err
	}
	req.Body = io.NopCloser(bytes.NewReader(data))
	req.ContentLength = int64(len(data))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }
	resp, err := x.c.do(x.rt, req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return nil
}

func (x *conn) Read(b []byte) (int, error)  { return x.down.Read(b) }
func (x *conn) Write(b []byte) (int, error) { return x.up.Write(b) }

// Close ends the stream's requests and waits for its goroutines.
func (x *conn) Close() error {
	x.once.Do(func() {
		x.fail(errClosed)
		x.down.discard()
		x.wg.Wait()
	})
	return nil
}

func (x *conn) LocalAddr() net.Addr  { return addr("xhttp") }
func (x *conn) RemoteAddr() net.Addr { return addr(x.c.cfg.Host) }

func (x *conn) SetDeadline(t time.Time) error {
	x.down.rd.set(t)
	x.up.wd.set(t)
	return nil
}
func (x *conn) SetReadDeadline(t time.Time) error  { x.down.rd.set(t); return nil }
func (x *conn) SetWriteDeadline(t time.Time) error { x.up.wd.set(t); return nil }

type addr string

func (a addr) Network() string { return "xhttp" }
func (a addr) String() string  { return string(a) }

// upBody is a streaming request body read from the upload pipe; it ends
// (END_STREAM) when the stream closes.
type upBody struct{ p *pipe }

func (b upBody) Read(p []byte) (int, error) {
	n, err := b.p.Read(p)
	if errors.Is(err, errClosed) {
		err = io.EOF
	}
	return n, err
}
func (b upBody) Close() error { return nil }
