package shadowsocks

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"golang.org/x/crypto/chacha20poly1305"
	"lukechampine.com/blake3"
)

// This file is a Shadowsocks server written for the tests from SIP004,
// SIP022 and SIP023, with primitives of its own (not the client's), and
// knobs to make it misbehave.

type testServer struct {
	method   string
	keyLen   int
	is2022   bool
	aesGCM   bool
	xchacha  bool
	psks     [][]byte // 2022: iPSK1…iPSKn, uPSK last; classic: the key alone
	misbehav misbehaviour
	salt     []byte // fixed response salt (to replay one); nil: random
	// source, when set, makes the server send this many bytes in chunks
	// of sourceChunk after the echo of the first chunk, instead of echoing
	// the rest (a download).
	source, sourceChunk int
}

type misbehaviour int

const (
	behave misbehaviour = iota
	wrongSaltEcho
	staleTimestamp
	corruptChunk
)

func (s *testServer) aead(key []byte) cipher.AEAD {
	switch {
	case s.aesGCM:
		b, _ := aes.NewCipher(key)
		g, _ := cipher.NewGCM(b)
		return g
	case s.xchacha:
		a, _ := chacha20poly1305.NewX(key)
		return a
	default:
		a, _ := chacha20poly1305.New(key)
		return a
	}
}

func (s *testServer) sessionAEAD(salt []byte) cipher.AEAD {
	key := s.psks[len(s.psks)-1]
	sub := make([]byte, s.keyLen)
	if s.is2022 {
		blake3.DeriveKey(sub, "shadowsocks 2022 session subkey", append(append([]byte{}, key...), salt...))
	} else {
		k, _ := hkdf.Key(sha1.New, key, salt, "ss-subkey", s.keyLen)
		copy(sub, k)
	}
	return s.aead(sub)
}

// tcpCodec seals and opens a stream's chunks with a counter nonce.
type tcpCodec struct {
	a     cipher.AEAD
	nonce []byte
}

func newCodec(a cipher.AEAD) *tcpCodec { return &tcpCodec{a: a, nonce: make([]byte, a.NonceSize())} }

func (c *tcpCodec) seal(p []byte) []byte {
	out := c.a.Seal(nil, c.nonce, p, nil)
	for i := range c.nonce {
		c.nonce[i]++
		if c.nonce[i] != 0 {
			break
		}
	}
	return out
}

func (c *tcpCodec) open(r io.Reader, n int) ([]byte, error) {
	b := make([]byte, n+16)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	out, err := c.a.Open(nil, c.nonce, b, nil)
	for i := range c.nonce {
		c.nonce[i]++
		if c.nonce[i] != 0 {
			break
		}
	}
	return out, err
}

func (c *tcpCodec) readChunk(r io.Reader) ([]byte, error) {
	l, err := c.open(r, 2)
	if err != nil {
		return nil, err
	}
	return c.open(r, int(binary.BigEndian.Uint16(l)))
}

func (c *tcpCodec) chunk(p []byte) []byte {
	var l [2]byte
	binary.BigEndian.PutUint16(l[:], uint16(len(p)))
	return append(c.seal(l[:]), c.seal(p)...)
}

// serveTCP reads one request from conn, checks it, and echoes the stream
// (the destination is reported on dsts).
func (s *testServer) serveTCP(conn net.Conn, dsts chan<- string) error {
	defer conn.Close()
	salt := make([]byte, s.keyLen)
	if _, err := io.ReadFull(conn, salt); err != nil {
		return err
	}
	if s.is2022 {
		for i := 0; i < len(s.psks)-1; i++ {
			eih := make([]byte, 16)
			if _, err := io.ReadFull(conn, eih); err != nil {
				return err
			}
			sub := make([]byte, s.keyLen)
			blake3.DeriveKey(sub, "shadowsocks 2022 identity subkey", append(append([]byte{}, s.psks[i]...), salt...))
			b, _ := aes.NewCipher(sub)
			b.Decrypt(eih, eih)
			want := blake3.Sum256(s.psks[i+1])
			if string(eih) != string(want[:16]) {
				return errors.New("identity header does not match")
			}
		}
	}
	in := newCodec(s.sessionAEAD(salt))
	var first []byte
	if s.is2022 {
		fixed, err := in.open(conn, 11)
		if err != nil {
			return fmt.Errorf("fixed header: %w", err)
		}
		if fixed[0] != 0 {
			return errors.New("request type")
		}
		if d := time.Now().Unix() - int64(binary.BigEndian.Uint64(fixed[1:9])); d > 30 || d < -30 {
			return errors.New("request timestamp")
		}
		v, err := in.open(conn, int(binary.BigEndian.Uint16(fixed[9:])))
		if err != nil {
			return fmt.Errorf("variable header: %w", err)
		}
		dst, n, err := parseAddrTest(v)
		if err != nil {
			return err
		}
		dsts <- dst
		pad := int(binary.BigEndian.Uint16(v[n:]))
		if pad > 900 {
			return errors.New("padding over 900")
		}
		first = v[n+2+pad:]
		if len(first) == 0 && pad == 0 {
			return errors.New("neither payload nor padding")
		}
	} else {
		c, err := in.readChunk(conn)
		if err != nil {
			return err
		}
		dst, n, err := parseAddrTest(c)
		if err != nil {
			return err
		}
		dsts <- dst
		first = c[n:]
	}
	rsalt := s.salt
	if rsalt == nil {
		rsalt = make([]byte, s.keyLen)
		rand.Read(rsalt)
	}
	out := newCodec(s.sessionAEAD(rsalt))
	// Wait for data to echo: the response header carries the first chunk.
	for len(first) == 0 {
		c, err := in.readChunk(conn)
		if err != nil {
			return err
		}
		first = c
	}
	resp := append([]byte{}, rsalt...)
	if s.is2022 {
		hdr := []byte{1}
		ts := time.Now().Unix()
		if s.misbehav == staleTimestamp {
			ts -= 120
		}
		hdr = binary.BigEndian.AppendUint64(hdr, uint64(ts))
		echo := append([]byte{}, salt...)
		if s.misbehav == wrongSaltEcho {
			echo[0] ^= 1
		}
		hdr = append(hdr, echo...)
		hdr = binary.BigEndian.AppendUint16(hdr, uint16(len(first)))
		resp = append(resp, out.seal(hdr)...)
		resp = append(resp, out.seal(first)...)
	} else {
		resp = append(resp, out.chunk(first)...)
	}
	if s.misbehav == corruptChunk {
		resp[len(resp)-1] ^= 1
	}
	if _, err := conn.Write(resp); err != nil {
		return err
	}
	if s.source > 0 {
		return s.send(conn, out)
	}
	for {
		c, err := in.readChunk(conn)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := conn.Write(out.chunk(c)); err != nil {
			return err
		}
	}
}

// send writes s.source bytes as chunks of s.sourceChunk, several chunks per
// write, as a server's relay would.
func (s *testServer) send(conn net.Conn, out *tcpCodec) error {
	payload := make([]byte, s.sourceChunk)
	var batch []byte
	for left := s.source; left > 0; {
		batch = batch[:0]
		for len(batch) < 64<<10 && left > 0 {
			n := min(left, len(payload))
			batch = append(batch, out.chunk(payload[:n])...)
			left -= n
		}
		if _, err := conn.Write(batch); err != nil {
			return err
		}
	}
	return nil
}

func parseAddrTest(b []byte) (string, int, error) {
	if len(b) < 1 {
		return "", 0, errors.New("empty address")
	}
	var host string
	var n int
	switch b[0] {
	case 1:
		host, n = net.IP(b[1:5]).String(), 5
	case 4:
		host, n = net.IP(b[1:17]).String(), 17
	case 3:
		host, n = string(b[2:2+int(b[1])]), 2+int(b[1])
	default:
		return "", 0, errors.New("address type")
	}
	return net.JoinHostPort(host, fmt.Sprint(binary.BigEndian.Uint16(b[n:]))), n + 2, nil
}

// serveUDP answers every packet on pc with its payload, from the
// destination it named.
func (s *testServer) serveUDP(pc net.PacketConn) {
	buf := make([]byte, 70000)
	srvSession := make([]byte, 8)
	rand.Read(srvSession)
	var pid uint64
	upsk := s.psks[len(s.psks)-1]
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		pkt := append([]byte{}, buf[:n]...)
		var reply []byte
		switch {
		case !s.is2022:
			a := s.sessionAEAD(pkt[:s.keyLen])
			plain, err := a.Open(nil, make([]byte, a.NonceSize()), pkt[s.keyLen:], nil)
			if err != nil {
				continue
			}
			rsalt := make([]byte, s.keyLen)
			rand.Read(rsalt)
			r := s.sessionAEAD(rsalt)
			reply = append(rsalt, r.Seal(nil, make([]byte, r.NonceSize()), plain, nil)...)
		case s.aesGCM:
			hdr := pkt[:16]
			first, _ := aes.NewCipher(s.psks[0])
			first.Decrypt(hdr, hdr)
			off := 16
			for i := 0; i < len(s.psks)-1; i++ {
				b, _ := aes.NewCipher(s.psks[i])
				eih := pkt[off : off+16]
				b.Decrypt(eih, eih)
				want := blake3.Sum256(s.psks[i+1])
				for j := range eih {
					eih[j] ^= hdr[j]
				}
				if string(eih) != string(want[:16]) {
					continue
				}
				off += 16
			}
			sub := make([]byte, s.keyLen)
			blake3.DeriveKey(sub, "shadowsocks 2022 session subkey", append(append([]byte{}, upsk...), hdr[:8]...))
			body, err := s.aead(sub).Open(nil, hdr[4:16], pkt[off:], nil)
			if err != nil || body[0] != 0 {
				continue
			}
			pad := int(binary.BigEndian.Uint16(body[9:11]))
			addrAndData := body[11+pad:]
			rb := []byte{1}
			rb = binary.BigEndian.AppendUint64(rb, uint64(time.Now().Unix()))
			rb = append(rb, hdr[:8]...)
			rb = append(rb, 0, 0)
			rb = append(rb, addrAndData...)
			rh := append(append([]byte{}, srvSession...), binary.BigEndian.AppendUint64(nil, pid)...)
			pid++
			blake3.DeriveKey(sub, "shadowsocks 2022 session subkey", append(append([]byte{}, upsk...), srvSession...))
			sealed := s.aead(sub).Seal(nil, rh[4:16], rb, nil)
			ub, _ := aes.NewCipher(upsk)
			ub.Encrypt(rh, rh)
			reply = append(rh, sealed...)
		default:
			a, _ := chacha20poly1305.NewX(upsk)
			plain, err := a.Open(nil, pkt[:24], pkt[24:], nil)
			if err != nil {
				continue
			}
			body := plain[16:]
			pad := int(binary.BigEndian.Uint16(body[9:11]))
			rb := append(append([]byte{}, srvSession...), binary.BigEndian.AppendUint64(nil, pid)...)
			pid++
			rb = append(rb, 1)
			rb = binary.BigEndian.AppendUint64(rb, uint64(time.Now().Unix()))
			rb = append(rb, plain[:8]...)
			rb = append(rb, 0, 0)
			rb = append(rb, body[11+pad:]...)
			nonce := make([]byte, 24)
			rand.Read(nonce)
			reply = append(nonce, a.Seal(nil, nonce, rb, nil)...)
		}
		pc.WriteTo(reply, from)
	}
}
