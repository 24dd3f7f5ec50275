package h2

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// maxSendFrame caps the DATA frames sent, whatever the server allows.
const maxSendFrame = 64 << 10

// hconn is one HTTP/2 connection: one reader goroutine (readLoop) hands
// frames to its streams; writes go under wmu.
type hconn struct {
	cl *Client
	nc net.Conn

	wmu  sync.Mutex // the framer's writes, the encoder, stream ID order
	bw   *bufio.Writer
	fr   *http2.Framer
	henc *hpack.Encoder
	hbuf bytes.Buffer

	mu          sync.Mutex
	streams     map[uint32]*stream
	reserved    int // streams promised by reserve, not yet opened
	nextID      uint32
	maxStreams  uint32 // the server's SETTINGS_MAX_CONCURRENT_STREAMS
	peerWindow  int32  // the server's SETTINGS_INITIAL_WINDOW_SIZE
	peerFrame   uint32 // the server's SETTINGS_MAX_FRAME_SIZE
	sendWin     int64  // the connection's send window
	recvAvail   int64  // the connection's receive window left to the server
	recvUnacked int64  // received and consumed, not yet given back
	goingAway   bool   // GOAWAY received, or the client closed: no new streams
	err         error  // set once the connection is dead

	lastRead  atomic.Int64 // unix nanoseconds of the last frame read
	pingSent  atomic.Bool
	keepalive *time.Timer
	done      chan struct{} // closed when readLoop ends
}

func startConn(cl *Client, nc net.Conn) (*hconn, error) {
	hc := &hconn{cl: cl, nc: nc, streams: map[uint32]*stream{}, nextID: 1,
		maxStreams: 100, peerWindow: 65535, peerFrame: 16384, sendWin: 65535,
		recvAvail: connWindow, done: make(chan struct{})}
	hc.bw = bufio.NewWriterSize(nc, 16<<10)
	br := bufio.NewReaderSize(nc, 16<<10)
	hc.fr = http2.NewFramer(hc.bw, br)
	hc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	// SETTINGS_MAX_FRAME_SIZE stays at its default: a larger frame is the
	// server's error, not 16 MiB of read buffer (the Framer's own limit).
	hc.fr.SetMaxReadFrameSize(16384)
	hc.fr.MaxHeaderListSize = 1 << 20
	hc.henc = hpack.NewEncoder(&hc.hbuf)
	// The server may assume 100 concurrent streams until its SETTINGS
	// (RFC 9113 6.5.2 recommends no fewer); it tells us with the first frame.
	if _, err := hc.bw.WriteString(http2.ClientPreface); err != nil {
		return nil, fmt.Errorf("h2: preface: %w", err)
	}
	err := hc.fr.WriteSettings(
		http2.Setting{ID: http2.SettingEnablePush, Val: 0},
		http2.Setting{ID: http2.SettingInitialWindowSize, Val: minStreamWindow},
		http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: 1 << 20},
	)
	if err == nil {
		err = hc.fr.WriteWindowUpdate(0, connWindow-65535)
	}
	if err == nil {
		err = hc.bw.Flush()
	}
	if err != nil {
		return nil, fmt.Errorf("h2: settings: %w", err)
	}
	hc.lastRead.Store(time.Now().UnixNano())
	hc.keepalive = time.AfterFunc(cl.idle, hc.checkAlive)
	go hc.readLoop(br)
	return hc, nil
}

// reserve promises a stream on the connection if it has room; the
// client's mu is held.
func (hc *hconn) reserve() bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	if hc.err != nil || hc.goingAway || uint32(len(hc.streams)+hc.reserved) >= hc.maxStreams || hc.nextID > math.MaxInt32-2 {
		return false
	}
	hc.reserved++
	return true
}

// checkAlive pings a silent connection and closes one that read nothing
// in the ping's time. The ping is not queued behind a write that blocks
// (a dead peer's full send buffer): then the write itself is the probe.
func (hc *hconn) checkAlive() {
	silent := time.Since(time.Unix(0, hc.lastRead.Load()))
	if hc.pingSent.Load() {
		if silent >= hc.cl.ping {
			hc.close(errors.New("h2: keepalive ping timed out"))
			return
		}
		hc.pingSent.Store(false)
	}
	if silent < hc.cl.idle {
		hc.keepalive.Reset(hc.cl.idle - silent)
		return
	}
	hc.pingSent.Store(true)
	if hc.wmu.TryLock() {
		err := hc.fr.WritePing(false, [8]byte{'s', 'k', 'i', 'f', 'f'})
		if err == nil {
			err = hc.bw.Flush()
		}
		hc.wmu.Unlock()
		if err != nil {
			hc.close(err)
			return
		}
	}
	hc.keepalive.Reset(hc.cl.ping)
}

// write runs f under the write lock and flushes.
func (hc *hconn) write(f func() error) error {
	hc.wmu.Lock()
	defer hc.wmu.Unlock()
	if err := f(); err != nil {
		return err
	}
	return hc.bw.Flush()
}

func (hc *hconn) readLoop(br *bufio.Reader) {
	defer close(hc.done)
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				hc.resetStream(se.StreamID, se.Code, fmt.Errorf("h2: stream %d: %w", se.StreamID, err))
				continue
			}
			var ce http2.ConnectionError
			if errors.As(err, &ce) {
				hc.goAway(http2.ErrCode(ce))
			}
			hc.close(fmt.Errorf("h2: reading: %w", err))
			return
		}
		hc.lastRead.Store(time.Now().UnixNano())
		if err := hc.handle(f); err != nil {
			hc.goAway(http2.ErrCodeProtocol)
			hc.close(err)
			return
		}
	}
}

// handle dispatches one frame; an error is the connection's.
func (hc *hconn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.DataFrame:
		return hc.onData(f)
	case *http2.MetaHeadersFrame:
		s := hc.stream(f.StreamID)
		if s == nil {
			if hc.unopened(f.StreamID) {
				return fmt.Errorf("h2: HEADERS on unopened stream %d", f.StreamID)
			}
			return nil
		}
		s.onHeaders(f)
	case *http2.RSTStreamFrame:
		if s := hc.stream(f.StreamID); s != nil {
			hc.remove(s)
			err := fmt.Errorf("h2: stream reset by the server: %v", f.ErrCode)
			if f.ErrCode == http2.ErrCodeRefusedStream {
				err = fmt.Errorf("%w (%v)", errRefused, f.ErrCode)
			}
			// A reset after the whole response (NO_ERROR: "stop sending",
			// RFC 9113 8.1) leaves the response readable.
			s.fail(err, true)
		} else if hc.unopened(f.StreamID) {
			return fmt.Errorf("h2: RST_STREAM on unopened stream %d", f.StreamID)
		}
	case *http2.SettingsFrame:
		if f.IsAck() {
			return nil
		}
		if err := hc.onSettings(f); err != nil {
			return err
		}
		return hc.write(hc.fr.WriteSettingsAck)
	case *http2.WindowUpdateFrame:
		return hc.onWindowUpdate(f)
	case *http2.PingFrame:
		if f.IsAck() {
			hc.pingSent.Store(false)
			return nil
		}
		return hc.write(func() error { return hc.fr.WritePing(true, f.Data) })
	case *http2.GoAwayFrame:
		hc.onGoAway(f)
	case *http2.PushPromiseFrame:
		return errors.New("h2: PUSH_PROMISE with push disabled")
	}
	return nil
}

func (hc *hconn) stream(id uint32) *stream {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return hc.streams[id]
}

// unopened reports whether a stream ID was never opened by us.
func (hc *hconn) unopened(id uint32) bool {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return id%2 == 0 || id >= hc.nextID
}

func (hc *hconn) onData(f *http2.DataFrame) error {
	n := int64(f.Header().Length) // padding counts too
	hc.mu.Lock()
	if n > hc.recvAvail {
		hc.mu.Unlock()
		return errors.New("h2: server overflowed the connection window")
	}
	hc.recvAvail -= n
	s := hc.streams[f.StreamID]
	unopened := f.StreamID%2 == 0 || f.StreamID >= hc.nextID
	hc.mu.Unlock()
	if s == nil {
		if unopened {
			return fmt.Errorf("h2: DATA on unopened stream %d", f.StreamID)
		}
		hc.consumed(n) // a stream we closed: give the window back
		return nil
	}
	if pad := n - int64(len(f.Data())); pad > 0 {
		hc.consumed(pad)
	}
	if !s.onData(f.Data(), n, f.StreamEnded()) {
		hc.resetStream(f.StreamID, http2.ErrCodeFlowControl, errors.New("h2: server overflowed the stream window"))
	}
	return nil
}

// consumed gives n bytes of connection window back, in large steps.
func (hc *hconn) consumed(n int64) {
	hc.mu.Lock()
	hc.recvUnacked += n
	inc := int64(0)
	if hc.recvUnacked >= connWindow/2 {
		inc, hc.recvUnacked = hc.recvUnacked, 0
		hc.recvAvail += inc
	}
	hc.mu.Unlock()
	if inc > 0 {
		hc.write(func() error { return hc.fr.WriteWindowUpdate(0, uint32(inc)) })
	}
}

func (hc *hconn) onSettings(f *http2.SettingsFrame) error {
	return f.ForeachSetting(func(st http2.Setting) error {
		if err := st.Valid(); err != nil {
			return err
		}
		hc.mu.Lock()
		defer hc.mu.Unlock()
		switch st.ID {
		case http2.SettingMaxConcurrentStreams:
			hc.maxStreams = st.Val
		case http2.SettingMaxFrameSize:
			hc.peerFrame = st.Val
		case http2.SettingInitialWindowSize:
			delta := int64(st.Val) - int64(hc.peerWindow)
			hc.peerWindow = int32(st.Val)
			for _, s := range hc.streams {
				s.addSendWindow(delta)
			}
		}
		return nil
	})
}

func (hc *hconn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	if f.StreamID == 0 {
		hc.mu.Lock()
		hc.sendWin += int64(f.Increment)
		over := hc.sendWin > math.MaxInt32
		streams := make([]*stream, 0, len(hc.streams))
		for _, s := range hc.streams {
			streams = append(streams, s)
		}
		hc.mu.Unlock()
		if over {
			return errors.New("h2: server overflowed our connection send window")
		}
		for _, s := range streams {
			wake(s.wwake)
		}
		return nil
	}
	s := hc.stream(f.StreamID)
	if s == nil {
		return nil
	}
	hc.mu.Lock()
	over := s.addSendWindow(int64(f.Increment))
	hc.mu.Unlock()
	if over {
		hc.resetStream(f.StreamID, http2.ErrCodeFlowControl, errors.New("h2: server overflowed a stream send window"))
	}
	return nil
}

func (hc *hconn) onGoAway(f *http2.GoAwayFrame) {
	hc.mu.Lock()
	hc.goingAway = true
	var refused []*stream
	for id, s := range hc.streams {
		if id > f.LastStreamID {
			refused = append(refused, s)
			delete(hc.streams, id)
		}
	}
	idle := len(hc.streams) == 0
	hc.mu.Unlock()
	hc.cl.removeConn(hc)
	if len(refused) > 0 {
		hc.cl.addOpen(-len(refused))
	}
	for _, s := range refused {
		s.fail(fmt.Errorf("%w: server going away (%v)", errRefused, f.ErrCode), false)
	}
	if idle {
		hc.close(errors.New("h2: server went away"))
	}
}

// goAway tells the server the connection ends with code.
func (hc *hconn) goAway(code http2.ErrCode) {
	_ = hc.write(func() error { return hc.fr.WriteGoAway(0, code, nil) })
}

// resetStream sends RST_STREAM and fails the stream with err.
func (hc *hconn) resetStream(id uint32, code http2.ErrCode, err error) {
	s := hc.stream(id)
	_ = hc.write(func() error { return hc.fr.WriteRSTStream(id, code) })
	if s != nil {
		hc.remove(s)
		s.fail(err, false)
	}
}

// remove unregisters a stream; a draining connection closes with its last.
func (hc *hconn) remove(s *stream) {
	hc.mu.Lock()
	_, ok := hc.streams[s.id]
	delete(hc.streams, s.id)
	last := hc.goingAway && len(hc.streams) == 0 && hc.reserved == 0
	hc.mu.Unlock()
	if ok {
		hc.cl.addOpen(-1)
	}
	if last {
		hc.close(errors.New("h2: connection drained"))
	}
}

// drain takes no new streams and closes once the last one ended.
func (hc *hconn) drain() {
	hc.mu.Lock()
	hc.goingAway = true
	idle := len(hc.streams) == 0 && hc.reserved == 0
	hc.mu.Unlock()
	if idle {
		hc.close(errors.New("h2: client closed"))
	}
}

// close ends the connection and fails its streams with err.
func (hc *hconn) close(err error) {
	hc.mu.Lock()
	if hc.err != nil {
		hc.mu.Unlock()
		return
	}
	hc.err = err
	streams := hc.streams
	hc.streams = map[uint32]*stream{}
	hc.mu.Unlock()
	hc.keepalive.Stop()
	hc.nc.Close()
	hc.cl.removeConn(hc)
	if n := len(streams); n > 0 {
		hc.cl.addOpen(-n)
	}
	for _, s := range streams {
		s.fail(err, true)
	}
}

// openStream sends a request's HEADERS as a new stream, in ID order.
func (hc *hconn) openStream(s *stream, cfg *Config, path string) error {
	hc.wmu.Lock()
	defer hc.wmu.Unlock()
	hc.mu.Lock()
	hc.reserved--
	if hc.err != nil {
		err := hc.err
		hc.mu.Unlock()
		return err
	}
	s.id = hc.nextID
	hc.nextID += 2
	s.sendWin = int64(hc.peerWindow)
	hc.streams[s.id] = s
	hc.mu.Unlock()
	hc.cl.addOpen(1)

	hc.hbuf.Reset()
	enc := func(k, v string) { hc.henc.WriteField(hpack.HeaderField{Name: k, Value: v}) }
	enc(":method", cfg.Method)
	enc(":scheme", cfg.Scheme)
	enc(":authority", cfg.Host)
	enc(":path", path)
	for k, v := range cfg.Headers {
		// Host is :authority, and HTTP/2 forbids the connection-specific
		// fields (RFC 9113 8.2.2): a server would reset the stream.
		switch k = strings.ToLower(k); k {
		case "host", "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			continue
		}
		enc(k, v)
	}
	if hc.hbuf.Len() > int(hc.peerFrameSize()) {
		return errors.New("h2: request headers too large")
	}
	err := hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: s.id, BlockFragment: hc.hbuf.Bytes(), EndHeaders: true})
	if err == nil {
		err = hc.bw.Flush()
	}
	return err
}

func (hc *hconn) peerFrameSize() uint32 {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	return hc.peerFrame
}

// newStream opens a stream (the connection was reserved) and waits for
// its response headers.
func (hc *hconn) newStream(ctx context.Context) (*stream, error) {
	cl := hc.cl
	s := newStream(hc)
	if err := hc.openStream(s, &cl.cfg, cl.path); err != nil {
		hc.remove(s)
		return nil, fmt.Errorf("h2: request to %s: %w", cl.target, err)
	}
	// Give the stream its share of the receive window.
	s.updateWindow()
	if cl.cfg.NoWait {
		return s, nil
	}
	for {
		s.mu.Lock()
		got, err := s.gotResp, s.err
		s.mu.Unlock()
		if err != nil {
			s.Close()
			var se *StatusError
			if errors.As(err, &se) {
				return nil, err
			}
			return nil, fmt.Errorf("h2: request to %s: %w", cl.target, err)
		}
		if got {
			return s, nil
		}
		select {
		case <-s.rwake:
		case <-ctx.Done():
			s.Close()
			return nil, fmt.Errorf("h2: request to %s: %w", cl.target, ctx.Err())
		}
	}
}

func statusOf(f *http2.MetaHeadersFrame) int {
	n, _ := strconv.Atoi(f.PseudoValue("status"))
	return n
}
