package quicconn

import (
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/flow"
)

func TestPacketQueueTarget(t *testing.T) {
	want := flow.AddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:53"))
	for _, tt := range []struct {
		name    string
		addr    net.Addr
		size    int
		shut    bool
		wantErr string
	}{
		{"flow.Addr", want, 10, false, ""},
		{"UDPAddr", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("192.0.2.1:53")), 10, false, ""},
		{"pointer to flow.Addr", &want, 10, false, ""},
		{"largest", want, MaxUDPPacket, false, ""},
		{"too large", want, MaxUDPPacket + 1, false, "tuic: UDP to 192.0.2.1:53 via srv:443: datagram of 65536 bytes"},
		{"nil address", nil, 10, false, "tuic: UDP via srv:443: "},
		{"shut", want, 10, true, net.ErrClosed.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := NewPacketQueue(nil)
			if tt.shut {
				q.Shut()
			}
			got, err := q.Target("tuic", "srv:443", make([]byte, tt.size), tt.addr)
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q…", err, tt.wantErr)
				}
				if tt.shut && !errors.Is(err, net.ErrClosed) {
					t.Fatalf("err = %v, want net.ErrClosed", err)
				}
				return
			}
			if err != nil || got != want {
				t.Fatalf("Target = %v, %v; want %v", got, err, want)
			}
		})
	}
}
