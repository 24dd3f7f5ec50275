package quicconn

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

// testSender is a Sender that records what it was asked to send.
type testSender struct {
	encodings int
	dst       flow.Addr
	raw       []byte
	n         int
	err       error // Send's
}

func (s *testSender) sender() Sender {
	return Sender{
		Proto: "tuic", Server: "srv:443",
		Encode: func(b []byte, dst flow.Addr) ([]byte, error) {
			s.encodings++
			if dst.Port == 0 {
				return b, errors.New("no port")
			}
			return append(b, dst.String()...), nil
		},
		Send: func(p []byte, dst flow.Addr, raw []byte) error {
			s.dst, s.raw, s.n = dst, raw, len(p)
			return s.err
		},
	}
}

func TestPacketQueueWriteTo(t *testing.T) {
	want := flow.AddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:53"))
	sendErr := errors.New("tuic: UDP to 192.0.2.1:53 via srv:443: lost")
	for _, tt := range []struct {
		name    string
		addr    net.Addr
		size    int
		shut    bool
		sendErr error
		wantErr string
	}{
		{"flow.Addr", want, 10, false, nil, ""},
		{"UDPAddr", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:53")), 10, false, nil, ""},
		{"pointer to flow.Addr", &want, 10, false, nil, ""},
		{"largest", want, MaxUDPPacket, false, nil, ""},
		{"too large", want, MaxUDPPacket + 1, false, nil, "tuic: UDP to 192.0.2.1:53 via srv:443: datagram of 65536 bytes"},
		{"nil address", nil, 10, false, nil, "tuic: UDP via srv:443: "},
		{"shut", want, 10, true, nil, net.ErrClosed.Error()},
		{"unencodable", flow.NameAddr("a.example", 0), 10, false, nil, "tuic: UDP via srv:443: no port"},
		{"send fails", want, 10, false, sendErr, sendErr.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &testSender{err: tt.sendErr}
			q := NewPacketQueue(nil, s.sender())
			if tt.shut {
				q.Shut()
			}
			n, err := q.WriteTo(make([]byte, tt.size), tt.addr)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || n != 0 {
					t.Fatalf("WriteTo = %d, %v; want 0, %q…", n, err, tt.wantErr)
				}
				if tt.shut && !errors.Is(err, net.ErrClosed) {
					t.Fatalf("err = %v, want net.ErrClosed", err)
				}
				return
			}
			if err != nil || n != tt.size {
				t.Fatalf("WriteTo = %d, %v; want %d", n, err, tt.size)
			}
			if s.dst != want || string(s.raw) != "192.0.2.1:53" || s.n != tt.size {
				t.Fatalf("sent %d bytes to %v as %q; want %d to %v as 192.0.2.1:53", s.n, s.dst, s.raw, tt.size, want)
			}
		})
	}
}

// TestPacketQueueWriteToAllocs: a session writing to one peer allocates
// nothing per datagram on its way to the Sender, and encodes the peer
// once.
func TestPacketQueueWriteToAllocs(t *testing.T) {
	s := &testSender{}
	q := NewPacketQueue(nil, s.sender())
	var dst net.Addr = flow.NameAddr("192.0.2.1", 53)
	p := make([]byte, 100)
	write := func() {
		if _, err := q.WriteTo(p, dst); err != nil {
			t.Fatal(err)
		}
	}
	write()
	if n := testing.AllocsPerRun(500, write); n != 0 {
		t.Errorf("WriteTo: %.1f allocations, want 0", n)
	}
	if s.encodings != 1 {
		t.Errorf("%d encodings of one peer, want 1", s.encodings)
	}
}
