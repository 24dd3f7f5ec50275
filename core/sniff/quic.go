package sniff

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
)

// QUIC versions whose Initial packets can be read (RFC 9000/9001, RFC 9369).
const (
	quicV1 = 0x00000001
	quicV2 = 0x6b3343cf
)

var (
	saltV1 = []byte{0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad, 0xcc, 0xbb, 0x7f, 0x0a}
	saltV2 = []byte{0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb, 0xf9, 0xbd, 0x2e, 0xd9}
)

const (
	maxConnIDLen     = 20
	maxQUICPackets   = 8  // Initial-bearing datagrams fed before giving up
	maxCryptoSpans   = 32 // distinct CRYPTO fragments tracked
	quicSampleLen    = 16
	quicTagLen       = 16
	frameTypePadding = 0x00
	frameTypePing    = 0x01
	frameTypeAck     = 0x02
	frameTypeAckECN  = 0x03
	frameTypeCrypto  = 0x06
	frameTypeClose   = 0x1c
)

// QUIC returns the SNI of the ClientHello carried in the client Initial
// packet(s) of one UDP datagram. When the ClientHello continues in a later
// datagram it returns ErrNeedMore; use a QUICSniffer to feed that one too.
func QUIC(datagram []byte) (string, error) {
	var s QUICSniffer
	return s.Feed(datagram)
}

// QUICSniffer reassembles the ClientHello of one QUIC connection from the
// client's Initial packets, which may spread it over several datagrams
// (post-quantum key shares make it larger than one packet) and send its
// CRYPTO frames out of order.
//
// The zero value is ready to use. A QUICSniffer is not safe for concurrent
// use; the engine keeps one per new UDP flow and drops it once Feed returns
// anything but ErrNeedMore.
type QUICSniffer struct {
	version uint32
	dcid    []byte
	keys    *initialKeys
	packets int

	crypto []byte               // CRYPTO stream bytes by offset
	spans  [maxCryptoSpans]span // filled ranges of crypto, sorted, merged
	nspans int
	hdr    []byte // scratch: unprotected header
	plain  []byte // scratch: decrypted payload
	mask   [16]byte
	nonce  [12]byte
}

type span struct{ start, end int }

type initialKeys struct {
	aead cipher.AEAD
	hp   cipher.Block
	iv   [12]byte
}

// Reset forgets everything fed so far, keeping the buffers.
func (s *QUICSniffer) Reset() {
	s.version, s.dcid, s.keys, s.packets, s.nspans = 0, s.dcid[:0], nil, 0, 0
	s.crypto = s.crypto[:0]
}

// Feed takes the next datagram the client sent and returns the SNI once
// the ClientHello is complete. It returns ErrNeedMore while it is not,
// ErrNoMatch when the datagram is not a QUIC v1/v2 client Initial (or
// cannot be decrypted), and ErrNoHost for a ClientHello without SNI.
func (s *QUICSniffer) Feed(datagram []byte) (string, error) {
	s.packets++
	if s.packets > maxQUICPackets {
		return "", ErrNoMatch
	}
	sawInitial := false
	d := datagram
	for len(d) > 0 {
		if d[0]&0x80 == 0 {
			break // a short-header packet ends the datagram's long ones
		}
		r := reader{b: d[1:]}
		var vb [4]byte
		copy(vb[:], r.bytes(4))
		version := binary.BigEndian.Uint32(vb[:])
		dcidLen := int(r.u8())
		if r.bad || dcidLen > maxConnIDLen || (version != quicV1 && version != quicV2) {
			return "", ErrNoMatch
		}
		dcid := r.bytes(dcidLen)
		scidLen := int(r.u8())
		if scidLen > maxConnIDLen {
			return "", ErrNoMatch
		}
		r.bytes(scidLen)
		typ := (d[0] >> 4) & 3
		initial := version == quicV1 && typ == 0 || version == quicV2 && typ == 1
		if initial {
			r.bytes(int(min(r.varint(), uint64(len(d))+1))) // token
		}
		length := r.varint()
		if r.bad || length > uint64(len(r.b)) {
			return "", ErrNoMatch
		}
		pnOffset := len(d) - len(r.b)
		end := pnOffset + int(length)
		if initial {
			if err := s.initialPacket(d[:end], pnOffset, version, dcid); err != nil {
				return "", err
			}
			sawInitial = true
		}
		d = d[end:]
	}
	if !sawInitial && s.keys == nil {
		return "", ErrNoMatch
	}
	return s.clientHello()
}

// initialPacket removes the protection of one client Initial packet and
// collects its CRYPTO frames.
func (s *QUICSniffer) initialPacket(pkt []byte, pnOffset int, version uint32, dcid []byte) error {
	if s.keys == nil || s.version != version || !bytes.Equal(s.dcid, dcid) {
		if s.keys != nil {
			return ErrNoMatch // a different connection: not the flow we sniff
		}
		k, err := deriveInitialKeys(version, dcid)
		if err != nil {
			return ErrNoMatch
		}
		s.keys, s.version, s.dcid = k, version, append(s.dcid[:0], dcid...)
	}
	if len(pkt) < pnOffset+4+quicSampleLen {
		return ErrNoMatch
	}
	s.keys.hp.Encrypt(s.mask[:], pkt[pnOffset+4:pnOffset+4+quicSampleLen])
	b0 := pkt[0] ^ s.mask[0]&0x0f
	pnLen := int(b0&3) + 1
	hdrLen := pnOffset + pnLen
	if len(pkt) < hdrLen+quicTagLen {
		return ErrNoMatch
	}
	s.hdr = append(s.hdr[:0], pkt[:hdrLen]...)
	s.hdr[0] = b0
	var pn uint64
	for i := range pnLen {
		s.hdr[pnOffset+i] ^= s.mask[1+i]
		pn = pn<<8 | uint64(s.hdr[pnOffset+i])
	}
	s.nonce = s.keys.iv
	for i := range 8 {
		s.nonce[4+i] ^= byte(pn >> (56 - 8*i))
	}
	plain, err := s.keys.aead.Open(s.plain[:0], s.nonce[:], pkt[hdrLen:], s.hdr)
	if err != nil {
		return ErrNoMatch
	}
	s.plain = plain[:0]
	return s.frames(plain)
}

// frames walks the frames of a decrypted Initial payload.
func (s *QUICSniffer) frames(p []byte) error {
	r := reader{b: p}
	for len(r.b) > 0 {
		switch t := r.varint(); t {
		case frameTypePadding, frameTypePing:
		case frameTypeAck, frameTypeAckECN:
			r.varint() // largest acknowledged
			r.varint() // ack delay
			n := r.varint()
			r.varint() // first range
			for i := uint64(0); i < n && !r.bad; i++ {
				r.varint() // gap
				r.varint() // range length
			}
			if t == frameTypeAckECN {
				r.varint()
				r.varint()
				r.varint()
			}
		case frameTypeCrypto:
			off := r.varint()
			n := r.varint()
			if r.bad || n > uint64(len(r.b)) || off+n > maxClientHelloLen {
				return ErrNoMatch
			}
			if err := s.addCrypto(int(off), r.bytes(int(n))); err != nil {
				return err
			}
		default:
			// CONNECTION_CLOSE or anything a client Initial may not carry.
			return ErrNoMatch
		}
		if r.bad {
			return ErrNoMatch
		}
	}
	return nil
}

// addCrypto stores CRYPTO stream data at off and records the filled range.
func (s *QUICSniffer) addCrypto(off int, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	end := off + len(data)
	if end > len(s.crypto) {
		if end > cap(s.crypto) {
			grown := make([]byte, end, max(end, 2*cap(s.crypto), 2048))
			copy(grown, s.crypto)
			s.crypto = grown
		} else {
			s.crypto = s.crypto[:end]
		}
	}
	copy(s.crypto[off:end], data)
	// Insert [off,end) into the sorted span list, merging overlaps.
	ns := span{off, end}
	var merged [maxCryptoSpans + 1]span
	m := 0
	placed := false
	for _, sp := range s.spans[:s.nspans] {
		if sp.end < ns.start {
			merged[m] = sp
			m++
			continue
		}
		if sp.start > ns.end {
			if !placed {
				merged[m] = ns
				m++
				placed = true
			}
			merged[m] = sp
			m++
			continue
		}
		ns.start, ns.end = min(ns.start, sp.start), max(ns.end, sp.end)
	}
	if !placed {
		merged[m] = ns
		m++
	}
	if m > maxCryptoSpans {
		return ErrNoMatch
	}
	copy(s.spans[:], merged[:m])
	s.nspans = m
	return nil
}

// clientHello parses the ClientHello once its bytes from offset 0 are all
// in.
func (s *QUICSniffer) clientHello() (string, error) {
	if s.nspans == 0 || s.spans[0].start != 0 {
		return "", ErrNeedMore
	}
	have := s.crypto[:s.spans[0].end]
	if have[0] != handshakeClientHello {
		return "", ErrNoMatch // CRYPTO data at offset 0 is not a ClientHello
	}
	if len(have) < 4 {
		return "", ErrNeedMore
	}
	hl := int(have[1])<<16 | int(have[2])<<8 | int(have[3])
	if 4+hl > maxClientHelloLen {
		return "", ErrNoMatch
	}
	if len(have) < 4+hl {
		return "", ErrNeedMore
	}
	return clientHelloSNI(have[4 : 4+hl])
}

// deriveInitialKeys computes the client's Initial packet protection keys
// from the Destination Connection ID (RFC 9001 section 5.2, RFC 9369
// section 3.3).
func deriveInitialKeys(version uint32, dcid []byte) (*initialKeys, error) {
	salt, keyLabel, ivLabel, hpLabel := saltV1, "quic key", "quic iv", "quic hp"
	if version == quicV2 {
		salt, keyLabel, ivLabel, hpLabel = saltV2, "quicv2 key", "quicv2 iv", "quicv2 hp"
	}
	initial, err := hkdf.Extract(sha256.New, dcid, salt)
	if err != nil {
		return nil, err
	}
	client, err := expandLabel(initial, "client in", sha256.Size)
	if err != nil {
		return nil, err
	}
	key, err := expandLabel(client, keyLabel, 16)
	if err != nil {
		return nil, err
	}
	iv, err := expandLabel(client, ivLabel, 12)
	if err != nil {
		return nil, err
	}
	hpKey, err := expandLabel(client, hpLabel, 16)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	hp, err := aes.NewCipher(hpKey)
	if err != nil {
		return nil, err
	}
	k := &initialKeys{aead: aead, hp: hp}
	copy(k.iv[:], iv)
	return k, nil
}

// expandLabel is TLS 1.3's HKDF-Expand-Label with an empty context
// (RFC 8446 section 7.1).
func expandLabel(secret []byte, label string, length int) ([]byte, error) {
	const prefix = "tls13 "
	info := make([]byte, 0, 4+len(prefix)+len(label))
	info = append(info, byte(length>>8), byte(length), byte(len(prefix)+len(label)))
	info = append(info, prefix...)
	info = append(info, label...)
	info = append(info, 0)
	return hkdf.Expand(sha256.New, secret, string(info), length)
}
