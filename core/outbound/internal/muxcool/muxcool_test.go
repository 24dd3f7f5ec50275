package muxcool

import (
	"bytes"
	"errors"
	"io"
	"net/netip"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

func TestMetaRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		name string
		m    Meta
	}{
		{"keep, no address", Meta{Session: 1, Status: StatusKeep, Opt: OptData}},
		{"new tcp ipv4", Meta{Session: 1, Status: StatusNew, Opt: OptData, Net: NetTCP, Addr: flow.AddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:80"))}},
		{"keep udp ipv6", Meta{Status: StatusKeep, Opt: OptData, Net: NetUDP, Addr: flow.AddrFromAddrPort(netip.MustParseAddrPort("[2001:db8::1]:443"))}},
		{"new udp name, extra", Meta{Status: StatusNew, Opt: OptData, Net: NetUDP, Addr: flow.NameAddr("example.com", 53), Extra: []byte{1, 2, 3, 4, 5, 6, 7, 8}}},
		{"end", Meta{Session: 1, Status: StatusEnd}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := AppendMeta([]byte("prefix"), tt.m)
			if err != nil {
				t.Fatal(err)
			}
			r := bytes.NewReader(b[len("prefix"):])
			h, err := ReadMeta(r, make([]byte, 512))
			if err != nil {
				t.Fatal(err)
			}
			if h.Session != tt.m.Session || h.Status != tt.m.Status || h.Opt != tt.m.Opt {
				t.Fatalf("read %+v, wrote %+v", h, tt.m)
			}
			if r.Len() != 0 {
				t.Fatalf("%d bytes left after the metadata", r.Len())
			}
			if !tt.m.Addr.IsValid() {
				if len(h.Rest) != 0 {
					t.Fatalf("rest %x without an address", h.Rest)
				}
				return
			}
			network, a, err := ParseAddr(h.Rest)
			if err != nil || network != tt.m.Net || a != tt.m.Addr {
				t.Fatalf("ParseAddr = %d, %v, %v; want %d, %v", network, a, err, tt.m.Net, tt.m.Addr)
			}
			if !bytes.HasSuffix(h.Rest, tt.m.Extra) {
				t.Fatalf("rest %x does not end with extra %x", h.Rest, tt.m.Extra)
			}
		})
	}
}

func TestAppendMetaRefusesLongName(t *testing.T) {
	long := string(bytes.Repeat([]byte{'a'}, 256))
	if _, err := AppendMeta(nil, Meta{Status: StatusNew, Net: NetTCP, Addr: flow.NameAddr(long, 80)}); err == nil {
		t.Fatal("a 256-byte name was appended")
	}
}

func TestReadMetaRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []byte
		want error // nil: any error
	}{
		{"empty", nil, io.EOF},
		{"short", []byte{0, 3, 0, 0, 1}, nil},
		{"longer than the buffer", []byte{0, 9, 0, 0, 1, 1, 0, 0, 0, 0, 0}, nil},
		{"truncated", []byte{0, 4, 0, 0}, io.ErrUnexpectedEOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadMeta(bytes.NewReader(tt.in), make([]byte, 8))
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestReadData(t *testing.T) {
	for _, tt := range []struct {
		name    string
		in      string
		p       int // len of the buffer; -1: nil
		n       int
		want    string
		wantErr bool
	}{
		{"fits", "hello!", 10, 5, "hello", false},
		{"cut", "hello!", 3, 5, "hel", false},
		{"discard", "hello!", -1, 5, "", false},
		{"truncated", "hi", 10, 5, "", true},
		{"truncated past the cut", "hel", 2, 5, "", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p []byte
			if tt.p >= 0 {
				p = make([]byte, tt.p)
			}
			r := bytes.NewReader([]byte(tt.in))
			n, err := ReadData(r, p, tt.n)
			if tt.wantErr {
				if !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Fatalf("err = %v, want io.ErrUnexpectedEOF", err)
				}
				return
			}
			if err != nil || string(p[:n]) != tt.want {
				t.Fatalf("read %q, %v; want %q", p[:n], err, tt.want)
			}
			if left := len(tt.in) - tt.n; r.Len() != left {
				t.Fatalf("%d bytes left, want %d", r.Len(), left)
			}
		})
	}
}

func TestParseAddrRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   []byte
	}{
		{"short", []byte{NetUDP, 0, 53}},
		{"ipv4 short", []byte{NetUDP, 0, 53, atypIPv4, 1, 2, 3}},
		{"ipv6 short", []byte{NetUDP, 0, 53, atypIPv6, 1, 2, 3, 4}},
		{"empty name", []byte{NetUDP, 0, 53, atypDomain, 0}},
		{"name short", []byte{NetUDP, 0, 53, atypDomain, 5, 'a'}},
		{"unknown type", []byte{NetUDP, 0, 53, 9, 1, 2, 3, 4}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if _, a, err := ParseAddr(tt.in); err == nil {
				t.Fatalf("parsed %v", a)
			}
		})
	}
}
