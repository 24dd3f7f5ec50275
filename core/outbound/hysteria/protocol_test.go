package hysteria

import (
	"bytes"
	"encoding/hex"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestClientHello checks the hello's bytes against v1's layout, written
// out by hand: version 3, send and receive rates (u64), auth length (u16)
// and auth, big-endian.
func TestClientHello(t *testing.T) {
	got, err := appendClientHello(nil, 12_500_000, 125_000_000, []byte("pw"))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := hex.DecodeString("03" + "0000000000bebc20" + "0000000007735940" + "0002" + "7077")
	if !bytes.Equal(got, want) {
		t.Fatalf("hello\n% x\nwant\n% x", got, want)
	}
	if _, err := appendClientHello(nil, 1, 1, make([]byte, 0x10000)); !errors.Is(err, errAuthTooLong) {
		t.Fatalf("64 KiB auth: %v", err)
	}
}

func TestServerHello(t *testing.T) {
	tests := []struct {
		name string
		wire string // hex
		want serverHello
		err  bool
	}{
		{"accepted", "01" + "0000000000000010" + "0000000000000020" + "0000", serverHello{OK: true, SendBPS: 16, RecvBPS: 32}, false},
		{"refused with message", "00" + "0000000000000000" + "0000000000000000" + "000e" + hex.EncodeToString([]byte("Wrong password")), serverHello{Message: "Wrong password"}, false},
		{"any non-zero ok byte", "07" + "0000000000000000" + "0000000000000000" + "0000", serverHello{OK: true}, false},
		{"truncated fixed part", "01000000", serverHello{}, true},
		{"message shorter than its length", "00" + "0000000000000000" + "0000000000000000" + "0005" + "6869", serverHello{}, true},
		{"empty", "", serverHello{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, _ := hex.DecodeString(tt.wire)
			got, err := readServerHello(bytes.NewReader(b))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestClientRequest(t *testing.T) {
	got, err := appendClientRequest(nil, false, "example.com", 443)
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]byte{0, 0, 11}, "example.com"...), 0x01, 0xbb)
	if !bytes.Equal(got, want) {
		t.Fatalf("TCP request % x, want % x", got, want)
	}
	if got, _ := appendClientRequest(nil, true, "", 0); !bytes.Equal(got, []byte{1, 0, 0, 0, 0}) {
		t.Fatalf("UDP request % x", got)
	}
	if _, err := appendClientRequest(nil, false, strings.Repeat("a", 256), 1); !errors.Is(err, errHostTooLong) {
		t.Fatalf("256-byte host: %v", err)
	}
}

func TestServerResponse(t *testing.T) {
	tests := []struct {
		name string
		wire []byte
		want serverResponse
		err  bool
	}{
		{"tcp ok", []byte{1, 0, 0, 0, 0, 0, 0}, serverResponse{OK: true}, false},
		{"udp session", []byte{1, 0, 0, 1, 2, 0, 0}, serverResponse{OK: true, SessionID: 258}, false},
		{"refused", append([]byte{0, 0, 0, 0, 0, 0, 4}, "nope"...), serverResponse{Message: "nope"}, false},
		{"truncated", []byte{1, 0, 0}, serverResponse{}, true},
		{"message cut", []byte{0, 0, 0, 0, 0, 0xff, 0xff, 'x'}, serverResponse{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readServerResponse(bytes.NewReader(tt.wire))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if err == nil && got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestUDPMessage(t *testing.T) {
	m := udpMessage{SessionID: 7, Host: []byte("2001:db8::1"), Port: 53, MsgID: 9, FragID: 1, FragCount: 3, Data: []byte("payload")}
	b := appendUDPMessage(nil, &m)
	want := []byte{0, 0, 0, 7, 0, 11}
	want = append(want, "2001:db8::1"...)
	want = append(want, 0, 53, 0, 9, 1, 3, 0, 7)
	want = append(want, "payload"...)
	if !bytes.Equal(b, want) {
		t.Fatalf("message\n% x\nwant\n% x", b, want)
	}
	if len(b) != m.headerLen()+len(m.Data) {
		t.Fatalf("headerLen %d for a %d-byte message with %d data bytes", m.headerLen(), len(b), len(m.Data))
	}
	var got udpMessage
	if err := parseUDPMessage(append(b, "trailing"...), &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, m) {
		t.Fatalf("parsed %+v, want %+v", got, m)
	}
	for _, tc := range []struct {
		name string
		b    []byte
		err  error
	}{
		{"empty", nil, errShortMessage},
		{"host longer than the message", []byte{0, 0, 0, 1, 0, 50, 'a', 0, 1, 0, 0, 0, 1, 0, 0}, errShortMessage},
		{"data longer than the message", []byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 9, 'x'}, errShortMessage},
		{"fragment ID beyond the count", []byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 5, 3, 2, 0, 0}, errBadFragment},
	} {
		if err := parseUDPMessage(tc.b, &got); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
}

// FuzzServerHello: any bytes give a hello or an error, never a panic,
// and a hello read back from its own encoding is the same.
func FuzzServerHello(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0})
	f.Add(append([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3}, "bad"...))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		sh, err := readServerHello(r)
		if err != nil {
			return
		}
		if used := len(b) - r.Len(); used != serverHelloFixed+len(sh.Message) {
			t.Fatalf("read %d bytes for a hello with a %d-byte message", used, len(sh.Message))
		}
	})
}

// FuzzServerResponse: any bytes give a response or an error, and a
// response never reads past its own end (the stream's data follows it).
func FuzzServerResponse(f *testing.F) {
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 'd', 'a', 't', 'a'})
	f.Add(append([]byte{0, 0, 0, 0, 0, 0, 2}, "no"...))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		sr, err := readServerResponse(r)
		if err != nil {
			return
		}
		if used := len(b) - r.Len(); used != serverResponseFixed+len(sr.Message) {
			t.Fatalf("read %d bytes for a response with a %d-byte message", used, len(sr.Message))
		}
		rest, _ := io.ReadAll(r)
		if !bytes.Equal(rest, b[serverResponseFixed+len(sr.Message):]) {
			t.Fatal("the data after the response changed")
		}
	})
}

// FuzzUDPMessage: any datagram parses or is refused without a panic; one
// that parses encodes back to its own prefix, and its fragment fields are
// consistent.
func FuzzUDPMessage(f *testing.F) {
	f.Add(appendUDPMessage(nil, &udpMessage{SessionID: 1, Host: []byte("1.2.3.4"), Port: 53, FragCount: 1, Data: []byte("q")}))
	f.Add(appendUDPMessage(nil, &udpMessage{SessionID: 1, Host: []byte("example.com"), Port: 1, MsgID: 3, FragID: 2, FragCount: 3, Data: make([]byte, 1000)}))
	f.Add([]byte{0, 0, 0, 1, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var m udpMessage
		if parseUDPMessage(b, &m) != nil {
			return
		}
		if m.FragCount > 1 && m.FragID >= m.FragCount {
			t.Fatalf("fragment %d of %d accepted", m.FragID, m.FragCount)
		}
		out := appendUDPMessage(nil, &m)
		if !bytes.HasPrefix(b, out) {
			t.Fatalf("re-encoded % x is not a prefix of % x", out, b)
		}
	})
}
