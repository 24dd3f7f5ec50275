package udpgro

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
)

// listen returns a GRO Conn on IPv4 loopback, closed when t ends.
func listen(t *testing.T) *Conn {
	t.Helper()
	uc, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(uc)
	if err != nil {
		uc.Close()
		t.Skipf("kernel refuses UDP_GRO: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// pair returns a GRO Conn and a sender socket, both on IPv4 loopback.
func pair(t *testing.T) (*Conn, *net.UDPConn) {
	t.Helper()
	c := listen(t)
	tx, err := net.DialUDP("udp4", nil, c.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return c, tx
}

// setsockopt sets an integer option on uc.
func setsockopt(t *testing.T, uc *net.UDPConn, level, opt, v int) {
	t.Helper()
	rc, err := uc.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.SetsockoptInt(int(fd), level, opt, v) }); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatalf("setsockopt %d/%d: %v", level, opt, serr)
	}
}

// sendGSO sends total bytes as one datagram cut by the kernel into
// packets of seg bytes (UDP_SEGMENT), or as a plain datagram when seg is 0.
// Packet k is filled with byte base+k.
func sendGSO(t *testing.T, tx *net.UDPConn, total, seg int, base byte) {
	t.Helper()
	b := make([]byte, total)
	for i := range b {
		if seg > 0 {
			b[i] = base + byte(i/seg)
		} else {
			b[i] = base
		}
	}
	var oob []byte
	if seg > 0 {
		oob = segmentOOB(seg)
	}
	if _, _, err := tx.WriteMsgUDP(b, oob, nil); err != nil {
		t.Fatalf("send %d bytes in segments of %d: %v", total, seg, err)
	}
}

// segmentOOB returns a UDP_SEGMENT control message for GSO with
// segments of seg bytes.
func segmentOOB(seg int) []byte {
	return udpCmsg(unix.UDP_SEGMENT, binary.NativeEndian.AppendUint16(nil, uint16(seg)))
}

// udpCmsg returns one IPPROTO_UDP control message of type typ.
func udpCmsg(typ int32, value []byte) []byte {
	oob := make([]byte, unix.CmsgSpace(len(value)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
	h.Level = unix.IPPROTO_UDP
	h.Type = typ
	h.SetLen(unix.CmsgLen(len(value)))
	copy(oob[unix.CmsgSpace(0):], value)
	return oob
}

// messages returns n messages with buffers of size bytes and OOB of oob bytes.
func messages(n, size, oob int) []ipv4.Message {
	ms := make([]ipv4.Message, n)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, size)}
		ms[i].OOB = make([]byte, oob)
	}
	return ms
}

// want is one packet expected from a read.
type want struct {
	size int
	fill byte
}

// expect lists the packets of total bytes sent in segments of seg.
func expect(total, seg int, base byte) []want {
	if seg == 0 {
		return []want{{total, base}}
	}
	var w []want
	for k := 0; k*seg < total || (total == 0 && k == 0); k++ {
		w = append(w, want{min(seg, total-k*seg), base + byte(k)})
	}
	return w
}

// readAll reads len(w) packets with batches of len(ms) and checks them.
func readAll(t *testing.T, c *Conn, ms []ipv4.Message, w []want, from net.Addr) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := 0
	for got < len(w) {
		n, err := c.ReadBatch(ms, 0)
		if err != nil {
			t.Fatalf("after %d of %d packets: %v", got, len(w), err)
		}
		if n == 0 || n > len(ms) {
			t.Fatalf("ReadBatch returned %d messages for %d slots", n, len(ms))
		}
		for i := range n {
			m := &ms[i]
			if got >= len(w) {
				t.Fatalf("more packets than the %d sent", len(w))
			}
			e := w[got]
			if m.N != e.size {
				t.Fatalf("packet %d: %d bytes, want %d", got, m.N, e.size)
			}
			if !bytes.Equal(m.Buffers[0][:m.N], bytes.Repeat([]byte{e.fill}, e.size)) {
				t.Fatalf("packet %d: wrong content (first byte %d, want %d)", got, m.Buffers[0][0], e.fill)
			}
			if m.Addr == nil || m.Addr.String() != from.String() {
				t.Fatalf("packet %d: from %v, want %v", got, m.Addr, from)
			}
			if m.Flags != 0 {
				t.Fatalf("packet %d: flags %#x", got, m.Flags)
			}
			got++
		}
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name   string
		sends  [][2]int // total bytes, segment size (0: plain datagram)
		slots  int      // messages per ReadBatch
		coaled bool     // the kernel must hand over fewer datagrams than packets
	}{
		{"exact segments", [][2]int{{4 * 1200, 1200}}, 8, true},
		{"trailing short segment", [][2]int{{3*1200 + 500, 1200}}, 8, true},
		{"plain datagram", [][2]int{{700, 0}}, 8, false},
		{"empty datagram", [][2]int{{0, 0}}, 8, false},
		{"cursor across calls", [][2]int{{40*1350 + 17, 1350}}, 3, true},
		{"one slot", [][2]int{{5 * 1000, 1000}}, 1, true},
		{"several datagrams", [][2]int{{6 * 1200, 1200}, {300, 0}, {2*1452 + 1, 1452}}, 8, true},
		{"more datagrams than slots", [][2]int{{2400, 1200}, {2400, 1200}, {2400, 1200}, {2400, 1200}, {2400, 1200}, {2400, 1200}}, 8, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, tx := pair(t)
			var w []want
			for i, s := range tt.sends {
				base := byte(10 * (i + 1))
				sendGSO(t, tx, s[0], s[1], base)
				w = append(w, expect(s[0], s[1], base)...)
			}
			readAll(t, c, messages(tt.slots, 1500, oobSize), w, tx.LocalAddr())
			st := c.Stats()
			if st.Segments != uint64(len(w)) {
				t.Errorf("Stats.Segments = %d, want %d", st.Segments, len(w))
			}
			if st.Datagrams != uint64(len(tt.sends)) {
				t.Errorf("Stats.Datagrams = %d, want %d (one per send: the kernel did not coalesce)", st.Datagrams, len(tt.sends))
			}
			if tt.coaled && st.Datagrams >= st.Segments {
				t.Errorf("no coalescing: %+v", st)
			}
			if want := (len(tt.sends) + slots - 1) / slots; st.Reads != uint64(want) {
				t.Errorf("Stats.Reads = %d, want %d", st.Reads, want)
			}
		})
	}
}

// TestControlMessages checks that every packet of a coalesced datagram
// carries its ECN bits and packet info, as quic-go asks for them, and no
// UDP_GRO message.
func TestControlMessages(t *testing.T) {
	c, tx := pair(t)
	setsockopt(t, c.uc, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
	setsockopt(t, c.uc, unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
	setsockopt(t, tx, unix.IPPROTO_IP, unix.IP_TOS, 0x02) // ECT(0)
	sendGSO(t, tx, 5*1200+1, 1200, 1)
	ms := messages(4, 1500, oobSize)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	for got := 0; got < 6; {
		n, err := c.ReadBatch(ms, 0)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			var tos, pktinfo bool
			oob := ms[i].OOB[:ms[i].NN]
			for len(oob) > 0 {
				h, body, next, err := unix.ParseOneSocketControlMessage(oob)
				if err != nil {
					t.Fatalf("packet %d: bad control message: %v", got, err)
				}
				switch {
				case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_TOS:
					tos = true
					if body[0]&3 != 2 {
						t.Errorf("packet %d: ECN bits %d, want 2", got, body[0]&3)
					}
				case h.Level == unix.IPPROTO_IP && h.Type == unix.IP_PKTINFO:
					pktinfo = true
					if dst := net.IP(body[8:12]); !dst.Equal(net.IPv4(127, 0, 0, 1)) {
						t.Errorf("packet %d: destination %v", got, dst)
					}
				case h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO:
					t.Errorf("packet %d: UDP_GRO control message left in", got)
				}
				oob = next
			}
			if !tos || !pktinfo {
				t.Errorf("packet %d: TOS %v, packet info %v; want both", got, tos, pktinfo)
			}
			got++
		}
	}
}

// TestTruncation checks what happens when the caller's buffers are too
// short: the packet and the control messages are cut, with the flags
// recvmsg would set, and the next packet is not affected.
func TestTruncation(t *testing.T) {
	c, tx := pair(t)
	setsockopt(t, c.uc, unix.IPPROTO_IP, unix.IP_RECVTOS, 1)
	setsockopt(t, c.uc, unix.IPPROTO_IP, unix.IP_PKTINFO, 1)
	sendGSO(t, tx, 2*1200, 1200, 1)
	// Room for the first control message (IP_PKTINFO, as the kernel
	// orders them) but not for the next (IP_TOS).
	ms := messages(1, 1000, unix.CmsgSpace(12)+unix.CmsgSpace(1)-1)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.ReadBatch(ms, 0); err != nil || n != 1 {
		t.Fatalf("ReadBatch = %d, %v", n, err)
	}
	if ms[0].N != 1000 || ms[0].Flags&unix.MSG_TRUNC == 0 || ms[0].Flags&unix.MSG_CTRUNC == 0 {
		t.Errorf("N %d, flags %#x: want 1000 bytes, MSG_TRUNC and MSG_CTRUNC", ms[0].N, ms[0].Flags)
	}
	if h, _, _, err := unix.ParseOneSocketControlMessage(ms[0].OOB[:ms[0].NN]); err != nil || ms[0].NN != unix.CmsgSpace(12) || h.Type != unix.IP_PKTINFO {
		t.Errorf("NN = %d (%v): want the IP_PKTINFO message alone (%d bytes)", ms[0].NN, err, unix.CmsgSpace(12))
	}
	// Scattered over two buffers, with room for everything.
	ms[0].Buffers = [][]byte{make([]byte, 700), make([]byte, 700)}
	ms[0].OOB = make([]byte, oobSize)
	if n, err := c.ReadBatch(ms, 0); err != nil || n != 1 {
		t.Fatalf("ReadBatch = %d, %v", n, err)
	}
	if ms[0].N != 1200 || ms[0].Flags != 0 || ms[0].Buffers[1][499] != 2 {
		t.Errorf("N %d, flags %#x, byte 1199 = %d: want 1200 bytes of 2, no flags", ms[0].N, ms[0].Flags, ms[0].Buffers[1][499])
	}
}

// TestReadFrom checks the one-packet reads (net.PacketConn and
// OOBCapablePacketConn) share the split with ReadBatch.
func TestReadFrom(t *testing.T) {
	c, tx := pair(t)
	sendGSO(t, tx, 3*1000, 1000, 7)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b := make([]byte, 1500)
	n, addr, err := c.ReadFrom(b)
	if err != nil || n != 1000 || b[0] != 7 || addr.String() != tx.LocalAddr().String() {
		t.Fatalf("ReadFrom = %d (%d), %v, %v", n, b[0], addr, err)
	}
	ms := messages(1, 1500, oobSize)
	if n, err := c.ReadBatch(ms, 0); err != nil || n != 1 || ms[0].Buffers[0][0] != 8 {
		t.Fatalf("ReadBatch = %d, %v (first byte %d, want 8)", n, err, ms[0].Buffers[0][0])
	}
	n, _, flags, uaddr, err := c.ReadMsgUDP(b, make([]byte, oobSize))
	if err != nil || n != 1000 || b[0] != 9 || flags != 0 || uaddr.Port != tx.LocalAddr().(*net.UDPAddr).Port {
		t.Fatalf("ReadMsgUDP = %d (%d), flags %#x, %v, %v", n, b[0], flags, uaddr, err)
	}
	c.SetReadDeadline(time.Now().Add(-time.Second))
	if _, _, err := c.ReadFrom(b); err == nil {
		t.Fatal("ReadFrom after the deadline: no error")
	} else if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("ReadFrom after the deadline: %v, want a timeout", err)
	}
}

// TestAllocs checks that splitting allocates nothing per packet: the only
// allocation left is x/net's address of each datagram.
func TestAllocs(t *testing.T) {
	c, tx := pair(t)
	const packets = 40
	ms := messages(8, 1500, oobSize)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	allocs := testing.AllocsPerRun(20, func() {
		sendGSO(t, tx, packets*1200, 1200, 0)
		for got := 0; got < packets; {
			n, err := c.ReadBatch(ms, 0)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	// sendGSO itself allocates its payload and control message; the read
	// side allocates the sender's address once per datagram.
	if allocs > 6 {
		t.Errorf("%.1f allocations per %d-packet datagram", allocs, packets)
	}
}

// TestWriteAllocs checks that a GSO write, as quic-go makes them, allocates
// nothing.
func TestWriteAllocs(t *testing.T) {
	c := listen(t)
	rx := listen(t)
	to := rx.LocalAddr().(*net.UDPAddr)
	b := make([]byte, 10*1200)
	oob := segmentOOB(1200)
	allocs := testing.AllocsPerRun(100, func() {
		if _, _, err := c.WriteMsgUDP(b, oob, to); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 0 {
		t.Errorf("%.1f allocations per write", allocs)
	}
}

func TestWrap(t *testing.T) {
	uc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatal(err)
	}
	defer uc.Close()
	closed, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	closed.Close()
	other, err := net.ListenPacket("unixgram", "@udpgro-test")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	tests := []struct {
		name    string
		pc      net.PacketConn
		wrapped bool
	}{
		{"UDP socket", uc, true},
		{"closed socket (option refused)", closed, false},
		{"not a UDP socket", other, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Wrap(tt.pc)
			if _, ok := got.(*Conn); ok != tt.wrapped {
				t.Fatalf("Wrap returned %T", got)
			}
			if !tt.wrapped && got != tt.pc {
				t.Fatalf("Wrap returned %v, want the conn unchanged", got)
			}
		})
	}
}
