package vmess

import (
	"crypto/cipher"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha3"
	"encoding/binary"
	"errors"

	"golang.org/x/crypto/chacha20poly1305"
)

// tagSize is the AEAD tag of the body ciphers.
const tagSize = 16

// maxPadding is the most global padding one chunk gets.
const maxPadding = 63

// maxChunkPayload is the most plaintext one chunk carries: a 60 KiB relay
// write is four chunks, each well under the 32 KiB Xray's reader allows.
// A whole chunk (payload, padding and tag) stays within 16 KiB: sing-box
// reads a multiplexed VMess stream into 16 KiB buffers and refused the
// 16,400-byte chunks of 16 KiB payloads ("short buffer: stream chunk need
// 16400").
const maxChunkPayload = 16<<10 - tagSize - maxPadding

// chunkOverhead bounds what a chunk adds to its payload.
const chunkOverhead = 2 + tagSize + maxPadding

var zeros [maxPadding]byte

// errChunk is a chunk whose size is shorter than its tag and padding.
var errChunk = errors.New("vmess: malformed chunk size")

// body is one direction's chunk state: the cipher (nil for none), the
// nonce counter and the SHAKE128 stream that masks sizes and draws the
// padding.
type body struct {
	aead    cipher.AEAD // nil: security none
	nonce   [12]byte    // counter (u16 BE) | IV[2:12]
	count   uint16
	shake   *sha3.SHAKE // nil: sizes in clear
	padding bool
}

// newBody returns the chunk state for key and iv with cipher sec and the
// request options opt.
func newBody(sec, opt byte, key, iv *[16]byte) *body {
	b := &body{padding: opt&optGlobalPadding != 0}
	switch sec {
	case secAES128GCM:
		b.aead = gcm(key[:])
	case secChacha20:
		b.aead = newChacha(key)
	}
	copy(b.nonce[2:], iv[2:12])
	if opt&optChunkMasking != 0 {
		b.shake = sha3.NewSHAKE128()
		b.shake.Write(iv[:])
	}
	return b
}

// newChacha returns ChaCha20-Poly1305 keyed MD5(key) || MD5(MD5(key)).
func newChacha(key *[16]byte) cipher.AEAD {
	var k [32]byte
	a := md5.Sum(key[:])
	copy(k[:16], a[:])
	b := md5.Sum(a[:])
	copy(k[16:], b[:])
	c, err := chacha20poly1305.New(k[:])
	if err != nil {
		panic(err)
	}
	return c
}

// overhead is the tag each chunk's payload gets.
func (b *body) overhead() int {
	if b.aead == nil {
		return 0
	}
	return tagSize
}

// next2 returns the next two bytes of the SHAKE stream.
func (b *body) next2() uint16 {
	var x [2]byte
	b.shake.Read(x[:])
	return binary.BigEndian.Uint16(x[:])
}

// sizeMask draws the chunk's padding length (first, as Xray does) and the
// mask of its size.
func (b *body) sizeMask() (pad int, mask uint16) {
	if b.padding && b.shake != nil {
		pad = int(b.next2() % 64)
	}
	if b.shake != nil {
		mask = b.next2()
	}
	return pad, mask
}

// nextNonce returns the nonce of the next chunk.
func (b *body) nextNonce() []byte {
	binary.BigEndian.PutUint16(b.nonce[:2], b.count)
	b.count++
	return b.nonce[:]
}

// seal appends one chunk carrying p (at most maxChunkPayload bytes; an
// empty p is the end of the stream): the masked size, the sealed payload
// and the padding.
func (b *body) seal(dst, p []byte) []byte {
	pad, mask := b.sizeMask()
	size := len(p) + b.overhead() + pad
	dst = binary.BigEndian.AppendUint16(dst, uint16(size)^mask)
	if b.aead != nil {
		dst = b.aead.Seal(dst, b.nextNonce(), p, nil)
	} else {
		dst = append(dst, p...)
	}
	if pad > 0 {
		o := len(dst)
		dst = append(dst, zeros[:pad]...)
		rand.Read(dst[o:])
	}
	return dst
}

// chunkSize decodes a chunk's size field: it returns how many bytes follow
// (sealed payload and padding), and of those the padding.
func (b *body) chunkSize(field [2]byte) (size, pad int, err error) {
	pad, mask := b.sizeMask()
	size = int(binary.BigEndian.Uint16(field[:]) ^ mask)
	if size < b.overhead()+pad {
		return 0, 0, errChunk
	}
	return size, pad, nil
}

// open opens a chunk's sealed payload into dst (which may be sealed[:0])
// and returns the plaintext.
func (b *body) open(dst, sealed []byte) ([]byte, error) {
	if b.aead == nil {
		return append(dst, sealed...), nil
	}
	return b.aead.Open(dst, b.nextNonce(), sealed, nil)
}
