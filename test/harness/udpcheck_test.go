package harness

import (
	"net"
	"strings"
	"testing"
)

// TestCheckUDPSizes runs the directional UDP check over loopback: it
// passes against the directional server, and fails, naming the sizes,
// against a server that drops large datagrams or only echoes.
func TestCheckUDPSizes(t *testing.T) {
	sizes := []int{1, 2, 999, 1400, 1401, 1402, 3000}
	for _, tc := range []struct {
		name    string
		serve   func(net.PacketConn) // nil: UDPEcho
		dir     byte
		wantErr string // "" passes
	}{
		{"download", ServeDirectionalUDP, Download, ""},
		{"upload", ServeDirectionalUDP, Upload, ""},
		{"upload-drops-large", dropLarge(1000), Upload, "4 of 7 sizes never arrived in 4 tries: 1400-1402 3000"},
		{"download-from-echo", nil, Download, "answers that match no datagram sent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := UDPEcho(t)
			if tc.serve != nil {
				pc, err := net.ListenPacket("udp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				defer pc.Close()
				go tc.serve(pc)
				addr = pc.LocalAddr().String()
			}
			c, err := net.Dial("udp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			err = CheckUDPSizes(SocketDatagrams{Conn: c}, tc.dir, sizes)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// dropLarge is the directional server, except that datagrams of more than
// max bytes, either way, are lost.
func dropLarge(max int) func(net.PacketConn) {
	return func(pc net.PacketConn) {
		buf := make([]byte, 65535)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			if reply := directionalReply(buf[:n]); n <= max && reply != nil && len(reply) <= max {
				pc.WriteTo(reply, from)
			}
		}
	}
}

func TestSizeRanges(t *testing.T) {
	for _, tc := range []struct {
		in   []int
		want string
	}{
		{nil, ""},
		{[]int{5}, "5"},
		{[]int{1, 2, 3}, "1-3"},
		{[]int{1, 3, 4, 9}, "1 3-4 9"},
	} {
		if got := sizeRanges(tc.in); got != tc.want {
			t.Errorf("sizeRanges(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
