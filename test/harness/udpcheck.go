package harness

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"time"
)

// The directional UDP server checks each direction of a UDP path on its
// own: small requests go one way, the datagram under test the other.
//
//	'D' size:uint16 nonce:[8]byte -> size bytes of DownPayload(nonce, size)
//	'U' ...                       -> 'H' len:uint16 sha256(datagram)[:16]
//
// A download check sends an 11-byte request and checks the size-byte
// answer; an upload check sends the size-byte datagram (starting with 'U')
// and checks its 19-byte receipt.

// ServeDirectionalUDP answers the directional UDP server's requests on pc
// until pc is closed.
func ServeDirectionalUDP(pc net.PacketConn) {
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if reply := directionalReply(buf[:n]); reply != nil {
			pc.WriteTo(reply, from)
		}
	}
}

// directionalReply is the answer to req; nil: none.
func directionalReply(req []byte) []byte {
	switch {
	case len(req) == 11 && req[0] == 'D':
		return downPayload(req[3:11], int(binary.BigEndian.Uint16(req[1:3])))
	case len(req) >= 1 && req[0] == 'U':
		return uploadReceipt(req)
	}
	return nil
}

// downPayload is the content of a size-byte download datagram: a SHA-256
// stream of the nonce and the size, so every size and run differs.
func downPayload(nonce []byte, size int) []byte {
	out := make([]byte, 0, size+sha256.Size)
	var block [8 + 2 + 4]byte
	copy(block[:], nonce)
	binary.BigEndian.PutUint16(block[8:], uint16(size))
	for i := uint32(0); len(out) < size; i++ {
		binary.BigEndian.PutUint32(block[10:], i)
		h := sha256.Sum256(block[:])
		out = append(out, h[:]...)
	}
	return out[:size]
}

func uploadReceipt(d []byte) []byte {
	h := sha256.Sum256(d)
	r := []byte{'H', 0, 0}
	binary.BigEndian.PutUint16(r[1:], uint16(len(d)))
	return append(r, h[:16]...)
}

// Directions of CheckUDPSizes.
const (
	Download byte = 'D' // datagrams from the far end (the server) to the client
	Upload   byte = 'U' // from the client to the far end
)

// DirectionName says "server to client" or "client to server".
func DirectionName(dir byte) string {
	if dir == Download {
		return "server to client"
	}
	return "client to server"
}

// DatagramConn is the client's end of a UDP path to a directional UDP
// server: a SOCKS5 association, or a connected UDP socket.
type DatagramConn interface {
	Send(p []byte) error
	// Receive reads one datagram, waiting at most wait.
	Receive(p []byte, wait time.Duration) (int, error)
}

// SocketDatagrams is a DatagramConn on a connected UDP socket.
type SocketDatagrams struct{ Conn net.Conn }

func (s SocketDatagrams) Send(p []byte) error { _, err := s.Conn.Write(p); return err }

func (s SocketDatagrams) Receive(p []byte, wait time.Duration) (int, error) {
	s.Conn.SetReadDeadline(time.Now().Add(wait))
	return s.Conn.Read(p)
}

// SOCKSDatagrams is a DatagramConn on a SOCKS5 UDP association, to Target.
type SOCKSDatagrams struct {
	A      *UDPAssociation
	Target string
}

func (s SOCKSDatagrams) Send(p []byte) error { return s.A.WriteTo(p, s.Target) }

func (s SOCKSDatagrams) Receive(p []byte, wait time.Duration) (int, error) {
	s.A.SetReadDeadline(time.Now().Add(wait))
	n, _, err := s.A.ReadFrom(p)
	return n, err
}

// CheckUDPSizes checks that a datagram of each size crosses c in direction
// dir intact. A datagram is sent again, up to four times in all, while its
// answer is missing, so that a loaded machine's odd loss does not fail
// the check; a size that never arrives does, as does an answer that
// matches nothing sent. At most 32 datagrams are in flight, so that socket
// buffers do not overflow.
func CheckUDPSizes(c DatagramConn, dir byte, sizes []int) error {
	type probe struct {
		size       int
		send, want []byte
	}
	nonce := make([]byte, 8)
	rand.Read(nonce)
	byAnswer := make(map[string]*probe, len(sizes))
	pending := make(map[*probe]bool, len(sizes))
	var all []*probe
	for _, n := range sizes {
		p := &probe{size: n}
		if dir == Download {
			p.send = []byte{'D', 0, 0}
			binary.BigEndian.PutUint16(p.send[1:], uint16(n))
			p.send = append(p.send, nonce...)
			p.want = downPayload(nonce, n)
		} else {
			p.send = make([]byte, n)
			rand.Read(p.send)
			p.send[0] = 'U'
			p.want = uploadReceipt(p.send)
		}
		byAnswer[string(p.want)] = p
		pending[p] = true
		all = append(all, p)
	}
	var bad []string
	buf := make([]byte, 65535)
	const window = 32
	for round := 1; round <= 4 && len(pending) > 0; round++ {
		inFlight := 0
		read := func(wait time.Duration) bool {
			n, err := c.Receive(buf, wait)
			if err != nil {
				return false
			}
			if p, ok := byAnswer[string(buf[:n])]; ok {
				if pending[p] {
					delete(pending, p)
					inFlight--
				}
			} else if len(bad) < 5 {
				bad = append(bad, fmt.Sprintf("%d bytes", n))
			}
			return true
		}
		for _, p := range all {
			if !pending[p] {
				continue
			}
			for inFlight >= window && read(200*time.Millisecond) {
			}
			if inFlight >= window {
				inFlight = 0 // answers lost: go on, the next round resends
			}
			if err := c.Send(p.send); err != nil {
				return fmt.Errorf("send %d-byte datagram: %w", len(p.send), err)
			}
			inFlight++
		}
		for len(pending) > 0 && read(2*time.Second) {
		}
	}
	var missing []int
	for _, p := range all {
		if pending[p] {
			missing = append(missing, p.size)
		}
	}
	var errs []string
	if len(missing) > 0 {
		errs = append(errs, fmt.Sprintf("%d of %d sizes never arrived in 4 tries: %s", len(missing), len(sizes), sizeRanges(missing)))
	}
	if len(bad) > 0 {
		errs = append(errs, fmt.Sprintf("answers that match no datagram sent (corrupted?): %v", bad))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %s", DirectionName(dir), strings.Join(errs, "; "))
	}
	return nil
}

// sizeRanges writes sorted sizes as ranges: "1216-1400 3000".
func sizeRanges(s []int) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		j := i
		for j+1 < len(s) && s[j+1] == s[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", s[i], s[j])
		} else {
			fmt.Fprintf(&b, "%d", s[i])
		}
		i = j + 1
	}
	return b.String()
}

// SizeRange returns lo, lo+1, ..., hi.
func SizeRange(lo, hi int) []int {
	s := make([]int, 0, hi-lo+1)
	for n := lo; n <= hi; n++ {
		s = append(s, n)
	}
	return s
}
