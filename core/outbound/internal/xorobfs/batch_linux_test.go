package xorobfs

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
	"unsafe"

	"github.com/quic-go/quic-go"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/skiffvpn/skiff/internal/nettest"
)

// loopbackUDP returns a UDP socket on 127.0.0.1, closed when t ends.
func loopbackUDP(t testing.TB) *net.UDPConn {
	t.Helper()
	c, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// cmsg appends a control message with an integer body of size bytes.
func cmsg(b []byte, level, typ int32, size int, v uint32) []byte {
	start := len(b)
	b = append(b, make([]byte, unix.CmsgSpace(size))...)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[start]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(size))
	body := b[start+unix.CmsgLen(0):]
	switch size {
	case 1:
		body[0] = byte(v)
	case 2:
		binary.NativeEndian.PutUint16(body, uint16(v))
	default:
		binary.NativeEndian.PutUint32(body, v)
	}
	return b
}

// TestBatch writes GSO batches and single packets through the
// batching conn of each scheme and checks them on the wire (one datagram per
// packet, each with its own salt) and through a batching reader (every
// packet back, in order, with its ECN bits; junk dropped).
func TestBatch(t *testing.T) {
	tests := []struct {
		name  string
		size  int // bytes written
		seg   int // GSO segment size; 0 for a single packet
		junk  bool
		slots int
	}{
		{"single packet", 1200, 0, false, 8},
		{"GSO batch", 10 * 1252, 1252, false, 8},
		{"GSO batch, short last packet", 3*1252 + 100, 1252, false, 8},
		{"GSO batch, fewer slots", 9*1000 + 1, 1000, false, 3},
		{"junk first is dropped", 2 * 1252, 1252, true, 8},
	}
	for _, tt := range tests {
		for _, sc := range schemes {
			t.Run(sc.Name+"/"+tt.name, func(t *testing.T) {
				ua, ub, raw := loopbackUDP(t), loopbackUDP(t), loopbackUDP(t)
				a := NewConn(ua, sc, "pw").(*batchConn)
				b := NewConn(ub, sc, "pw").(*batchConn)
				rc, _ := ub.SyscallConn()
				rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVTOS, 1) })

				payload := make([]byte, tt.size)
				rand.Read(payload)
				oob := cmsg(nil, unix.IPPROTO_IP, unix.IP_TOS, 1, 1) // ECT(1)
				if tt.seg > 0 {
					oob = cmsg(oob, unix.IPPROTO_UDP, unix.UDP_SEGMENT, 2, uint32(tt.seg))
				}
				step := tt.seg
				if step == 0 {
					step = len(payload)
				}
				var want [][]byte
				for off := 0; off < len(payload); off += step {
					want = append(want, payload[off:min(off+step, len(payload))])
				}

				// On the wire.
				if n, _, err := a.WriteMsgUDP(payload, oob, raw.LocalAddr().(*net.UDPAddr)); err != nil || n != len(payload) {
					t.Fatalf("WriteMsgUDP = %d, %v", n, err)
				}
				raw.SetReadDeadline(time.Now().Add(2 * time.Second))
				buf := make([]byte, 65536)
				salts := map[string]bool{}
				for i, w := range want {
					n, err := raw.Read(buf)
					if err != nil {
						t.Fatalf("packet %d on the wire: %v", i, err)
					}
					if n != len(w)+sc.SaltLen {
						t.Fatalf("packet %d on the wire: %d bytes, want %d", i, n, len(w)+sc.SaltLen)
					}
					salts[string(buf[:sc.SaltLen])] = true
					got := make([]byte, len(w))
					if sc.New([]byte("pw")).Deobfuscate(got, buf[:n]) != len(w) || !bytes.Equal(got, w) {
						t.Fatalf("packet %d on the wire does not deobfuscate to what was written", i)
					}
				}
				if len(salts) != len(want) {
					t.Errorf("%d salts for %d packets", len(salts), len(want))
				}

				// Through a batching reader.
				if tt.junk {
					raw.WriteTo([]byte("short"), ub.LocalAddr())
				}
				if _, _, err := a.WriteMsgUDP(payload, oob, ub.LocalAddr().(*net.UDPAddr)); err != nil {
					t.Fatal(err)
				}
				ms := make([]ipv4.Message, tt.slots)
				for i := range ms {
					ms[i].Buffers = [][]byte{make([]byte, 1452)}
					ms[i].OOB = make([]byte, 128)
				}
				b.SetReadDeadline(time.Now().Add(2 * time.Second))
				for got := 0; got < len(want); {
					n, err := b.ReadBatch(ms, 0)
					if err != nil {
						t.Fatalf("after %d packets: %v", got, err)
					}
					for i := range n {
						m := &ms[i]
						if !bytes.Equal(m.Buffers[0][:m.N], want[got]) {
							t.Fatalf("packet %d: %d bytes, not the %d written", got, m.N, len(want[got]))
						}
						if m.Addr.String() != ua.LocalAddr().String() {
							t.Fatalf("packet %d from %v", got, m.Addr)
						}
						h, body, _, err := unix.ParseOneSocketControlMessage(m.OOB[:m.NN])
						if err != nil || h.Type != unix.IP_TOS || body[0]&3 != 1 {
							t.Fatalf("packet %d: control message %+v %v (%v), want IP_TOS with ECT(1)", got, h, body, err)
						}
						got++
					}
				}
			})
		}
	}
}

// TestBatchAllocs checks that the batching path allocates
// nothing per packet: a GSO batch of 10 packets written and read back
// costs little more than the sender address x/net allocates per datagram.
func TestBatchAllocs(t *testing.T) {
	ua, ub := loopbackUDP(t), loopbackUDP(t)
	a := NewConn(ua, XPlus, "pw").(*batchConn)
	b := NewConn(ub, XPlus, "pw").(*batchConn)
	payload := make([]byte, 10*1252)
	oob := cmsg(nil, unix.IPPROTO_UDP, unix.UDP_SEGMENT, 2, 1252)
	to := ub.LocalAddr().(*net.UDPAddr)
	ms := make([]ipv4.Message, 8)
	for i := range ms {
		ms[i].Buffers = [][]byte{make([]byte, 1452)}
		ms[i].OOB = make([]byte, 128)
	}
	b.SetReadDeadline(time.Now().Add(5 * time.Second))
	allocs := testing.AllocsPerRun(50, func() {
		if _, _, err := a.WriteMsgUDP(payload, oob, to); err != nil {
			t.Fatal(err)
		}
		for got := 0; got < 10; {
			n, err := b.ReadBatch(ms, 0)
			if err != nil {
				t.Fatal(err)
			}
			got += n
		}
	})
	// x/net allocates the sender's address of each datagram read (two
	// objects); under the race detector sync.Pool drops some of x/net's
	// pooled headers on purpose, which costs a few more now and then.
	if allocs > 5 {
		t.Errorf("%.1f allocations per batch of 10 packets", allocs)
	}
}

// BenchmarkTransfer moves data one way over quic-go between two
// Salamander conns on loopback, with the one-packet-per-call conn and with
// the batching one. Both ends run in this process, so ns/op (and the CPU
// time it reports) is the cost of both.
func BenchmarkTransfer(b *testing.B) {
	for _, bb := range []struct {
		name string
		wrap func(*net.UDPConn) net.PacketConn
	}{
		{"per-packet", func(c *net.UDPConn) net.PacketConn { return newConn(c, Salamander, "pw") }},
		{"batched", func(c *net.UDPConn) net.PacketConn { return NewConn(c, Salamander, "pw") }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			cert, _ := nettest.SelfSigned(b, "hy2.test")
			srv := &quic.Transport{Conn: bb.wrap(loopbackUDP(b))}
			defer srv.Close()
			ln, err := srv.Listen(&tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"b"}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			got := make(chan int64, 1)
			go func() { // ends when the client closes its stream or the transport closes
				qc, err := ln.Accept(ctx)
				if err != nil {
					got <- 0
					return
				}
				s, err := qc.AcceptStream(ctx)
				if err != nil {
					got <- 0
					return
				}
				n, _ := io.Copy(io.Discard, s)
				got <- n
			}()
			cli := &quic.Transport{Conn: bb.wrap(loopbackUDP(b))}
			defer cli.Close()
			qc, err := cli.Dial(ctx, ln.Addr(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"b"}}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer qc.CloseWithError(0, "")
			s, err := qc.OpenStreamSync(ctx)
			if err != nil {
				b.Fatal(err)
			}
			chunk := make([]byte, 1<<20)
			b.SetBytes(int64(len(chunk)))
			cpu0 := cpuTime(b)
			for b.Loop() {
				if _, err := s.Write(chunk); err != nil {
					b.Fatal(err)
				}
			}
			s.Close()
			if n := <-got; n != int64(b.N)*int64(len(chunk)) {
				b.Fatalf("received %d bytes, want %d", n, int64(b.N)*int64(len(chunk)))
			}
			b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// cpuTime returns the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
