package sniff

import (
	"crypto/tls"
	"encoding/binary"
	"testing"

	"github.com/quic-go/quic-go/quicvarint"
)

// sealInitial builds a client Initial packet of version carrying the
// frames in plain (padded to what header protection needs), protected with
// the keys of dcid: the packets a real client sends, but with payloads the
// fuzzer chooses, so that the frame walk and the CRYPTO reassembly behind
// the AEAD get fuzzed.
func sealInitial(t testing.TB, version uint32, dcid []byte, pn uint32, plain []byte) []byte {
	t.Helper()
	k, err := deriveInitialKeys(version, dcid)
	if err != nil {
		t.Fatal(err)
	}
	return sealWith(k, version, dcid, pn, plain)
}

// sealWith is sealInitial with the keys of dcid already derived.
func sealWith(k *initialKeys, version uint32, dcid []byte, pn uint32, plain []byte) []byte {
	for len(plain) < 4 {
		plain = append(plain, frameTypePadding)
	}
	typ := byte(0) // Initial in v1
	if version == quicV2 {
		typ = 1
	}
	hdr := []byte{0xc0 | typ<<4 | 3} // 4-byte packet number
	hdr = binary.BigEndian.AppendUint32(hdr, version)
	hdr = append(hdr, byte(len(dcid)))
	hdr = append(hdr, dcid...)
	hdr = append(hdr, 0) // no source connection ID
	hdr = append(hdr, 0) // no token
	hdr = quicvarint.Append(hdr, uint64(4+len(plain)+quicTagLen))
	pnOffset := len(hdr)
	hdr = binary.BigEndian.AppendUint32(hdr, pn)
	nonce := k.iv
	for i := range 8 {
		nonce[4+i] ^= byte(uint64(pn) >> (56 - 8*i))
	}
	pkt := k.aead.Seal(hdr, nonce[:], plain, hdr)
	var mask [16]byte
	k.hp.Encrypt(mask[:], pkt[pnOffset+4:pnOffset+4+quicSampleLen])
	pkt[0] ^= mask[0] & 0x0f
	for i := range 4 {
		pkt[pnOffset+i] ^= mask[1+i]
	}
	return pkt
}

// cryptoFrame returns a CRYPTO frame carrying data at off.
func cryptoFrame(off int, data []byte) []byte {
	b := quicvarint.Append([]byte{frameTypeCrypto}, uint64(off))
	b = quicvarint.Append(b, uint64(len(data)))
	return append(b, data...)
}

// FuzzQUICFrames feeds the sniffer two protected Initial packets whose
// decrypted payloads (frames) are arbitrary. It must never panic; the
// CRYPTO ranges it keeps stay sorted, apart, within the buffer and within
// the bounds on their number and the ClientHello's size; and a success
// names a host.
func FuzzQUICFrames(f *testing.F) {
	hello := clientHello(f, &tls.Config{ServerName: "example.com", MinVersion: tls.VersionTLS13, NextProtos: []string{"h3"}})
	msg := hello[5:] // the handshake message, without its record header (one record)
	half := len(msg) / 2
	f.Add(cryptoFrame(0, msg), []byte(nil), false)
	f.Add(cryptoFrame(half, msg[half:]), cryptoFrame(0, msg[:half]), true)
	f.Add(append(cryptoFrame(0, msg[:10]), cryptoFrame(5, msg[5:20])...), cryptoFrame(20, msg[20:]), false)
	f.Add([]byte{frameTypeAck, 1, 0, 1, 0, 0, 0, frameTypePing, frameTypePadding}, cryptoFrame(0, []byte{1, 0, 0, 0}), false)
	f.Add([]byte{frameTypeAckECN, 0x40, 1, 0, 0x80, 0, 0, 2, 0, 0, 0, 0}, []byte{frameTypeCrypto, 0x80, 0, 0xff, 0xff, 4}, true)
	f.Add([]byte{frameTypeClose, 0}, []byte(nil), false)
	dcid := []byte{0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08}
	keys := map[uint32]*initialKeys{}
	for _, v := range []uint32{quicV1, quicV2} {
		k, err := deriveInitialKeys(v, dcid)
		if err != nil {
			f.Fatal(err)
		}
		keys[v] = k
	}
	f.Fuzz(func(t *testing.T, a, b []byte, v2 bool) {
		version := uint32(quicV1)
		if v2 {
			version = quicV2
		}
		var s QUICSniffer
		for i, p := range [][]byte{a, b} {
			host, err := s.Feed(sealWith(keys[version], version, dcid, uint32(i), p))
			if err == nil && host == "" {
				t.Fatal("success without a host")
			}
			if s.nspans > maxCryptoSpans || len(s.crypto) > maxClientHelloLen {
				t.Fatalf("%d spans, %d CRYPTO bytes kept", s.nspans, len(s.crypto))
			}
			for j, sp := range s.spans[:s.nspans] {
				if sp.start >= sp.end || sp.end > len(s.crypto) || j > 0 && s.spans[j-1].end >= sp.start {
					t.Fatalf("spans %v over %d bytes", s.spans[:s.nspans], len(s.crypto))
				}
			}
			if err != ErrNeedMore {
				return
			}
		}
	})
}

// TestQUICCryptoReassembly reads a ClientHello cut into CRYPTO frames in
// packets built by sealInitial: whole, split across two packets out of
// order, and with overlapping frames; and a frame past the ClientHello
// bound is refused.
func TestQUICCryptoReassembly(t *testing.T) {
	hello := clientHello(t, &tls.Config{ServerName: "example.com"})
	msg := hello[5:]
	dcid := []byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, tc := range []struct {
		name    string
		packets [][]byte
		want    error
	}{
		{"one frame", [][]byte{cryptoFrame(0, msg)}, nil},
		{"two packets, second first", [][]byte{cryptoFrame(100, msg[100:]), cryptoFrame(0, msg[:100])}, nil},
		{"overlapping", [][]byte{append(cryptoFrame(0, msg[:60]), cryptoFrame(30, msg[30:])...)}, nil},
		{"last byte missing", [][]byte{cryptoFrame(0, msg[:len(msg)-1])}, ErrNeedMore},
		{"past the bound", [][]byte{cryptoFrame(maxClientHelloLen, []byte{1})}, ErrNoMatch},
		{"at the bound", [][]byte{cryptoFrame(maxClientHelloLen-1, []byte{1})}, ErrNeedMore},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s QUICSniffer
			var host string
			var err error
			for i, p := range tc.packets {
				host, err = s.Feed(sealInitial(t, quicV1, dcid, uint32(i), p))
			}
			if err != tc.want || tc.want == nil && host != "example.com" {
				t.Errorf("got %q, %v; want example.com, %v", host, err, tc.want)
			}
		})
	}
}
