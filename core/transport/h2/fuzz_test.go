package h2

import (
	"bytes"
	"context"
	"io"
	"net"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// serverSeeds are server byte streams: sane ones and ones that break a rule.
func serverSeeds() [][]byte {
	var seeds [][]byte
	frames := func(write func(fr *http2.Framer, block func(kv ...string) []byte)) []byte {
		var b bytes.Buffer
		fr := http2.NewFramer(&b, nil)
		var hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		write(fr, func(kv ...string) []byte {
			hb.Reset()
			for i := 0; i+1 < len(kv); i += 2 {
				enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
			}
			return append([]byte(nil), hb.Bytes()...)
		})
		return b.Bytes()
	}
	seeds = append(seeds,
		nil,
		[]byte("HTTP/1.1 400 Bad Request\r\n\r\n"),
		bytes.Repeat([]byte{0xff}, 32),
		frames(func(fr *http2.Framer, block func(kv ...string) []byte) {
			fr.WriteSettings(http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: 1})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "200"), EndHeaders: true})
			fr.WriteData(1, false, []byte("hello"))
			fr.WriteDataPadded(1, true, []byte("world"), make([]byte, 7))
		}),
		frames(func(fr *http2.Framer, block func(kv ...string) []byte) {
			fr.WriteSettings()
			b := block(":status", "200", "x-long", string(bytes.Repeat([]byte("a"), 100)))
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:10]})
			fr.WriteContinuation(1, true, b[10:])
			fr.WritePing(false, [8]byte{1})
			fr.WriteWindowUpdate(0, 1<<20)
			fr.WriteWindowUpdate(1, 1<<20)
			fr.WriteGoAway(1, http2.ErrCodeNo, []byte("bye"))
			fr.WriteData(1, true, nil)
		}),
		frames(func(fr *http2.Framer, block func(kv ...string) []byte) {
			fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1}, http2.Setting{ID: http2.SettingMaxFrameSize, Val: 1 << 14})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "100"), EndHeaders: true})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "200"), EndHeaders: true})
			fr.WriteRSTStream(1, http2.ErrCodeRefusedStream)
			fr.WriteRSTStream(3, http2.ErrCodeCancel)
		}),
		frames(func(fr *http2.Framer, block func(kv ...string) []byte) {
			fr.WriteSettings()
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "404"), EndHeaders: true, EndStream: true})
			fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, BlockFragment: block(":path", "/"), EndHeaders: true})
		}),
		frames(func(fr *http2.Framer, block func(kv ...string) []byte) {
			fr.WriteSettings()
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block(":status", "200"), EndHeaders: true})
			fr.WriteData(1, false, make([]byte, 16384))
			fr.WriteWindowUpdate(0, 1<<31-1)
			fr.WriteRawFrame(http2.FrameType(0x20), 0, 1, []byte("unknown"))
		}),
	)
	return seeds
}

// FuzzServer: whatever a server sends after the client's preface and
// settings, Dial and Read return, nothing panics, no goroutine is left.
func FuzzServer(f *testing.F) {
	for _, s := range serverSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		noLeak(t)
		cc, sc := net.Pipe()
		drained := make(chan struct{})
		go func() {
			defer close(drained)
			io.Copy(io.Discard, sc)
		}()
		go func() {
			sc.Write(data)
			sc.Close()
		}()
		c, _ := New(Config{Host: "h2.test"}, func(context.Context) (net.Conn, error) { return cc, nil })
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		done := make(chan struct{})
		go func() {
			defer close(done)
			conn, err := c.Dial(ctx)
			if err != nil {
				return
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(5 * time.Second))
			conn.Write([]byte("ping"))
			io.Copy(io.Discard, conn)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("Dial or Read did not return")
		}
		cc.Close()
		<-drained
	})
}
