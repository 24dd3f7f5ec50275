package vmess

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/md5"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"hash/fnv"

	"github.com/skiffvpn/skiff/core/flow"
)

// The labels of the VMess AEAD key derivation (Xray proxy/vmess/aead).
const (
	kdfRoot           = "VMess AEAD KDF"
	labelAuthID       = "AES Auth ID Encryption"
	labelHeaderLenKey = "VMess Header AEAD Key_Length"
	labelHeaderLenIV  = "VMess Header AEAD Nonce_Length"
	labelHeaderKey    = "VMess Header AEAD Key"
	labelHeaderIV     = "VMess Header AEAD Nonce"
	labelRespLenKey   = "AEAD Resp Header Len Key"
	labelRespLenIV    = "AEAD Resp Header Len IV"
	labelRespKey      = "AEAD Resp Header Key"
	labelRespIV       = "AEAD Resp Header IV"
)

// cmdKeySalt is appended to the user id to make the command key.
const cmdKeySalt = "c48619fe-8f02-49e0-b9e9-edf763e17e21"

// Request commands.
const (
	cmdTCP byte = 1
	cmdUDP byte = 2
)

// Address types of the request.
const (
	atypIPv4   byte = 1
	atypDomain byte = 2
	atypIPv6   byte = 3
)

// Request options.
const (
	optChunkStream   byte = 0x01
	optChunkMasking  byte = 0x04
	optGlobalPadding byte = 0x08
)

// Body ciphers as the request names them.
const (
	secAES128GCM byte = 3
	secChacha20  byte = 4
	secNone      byte = 5
)

// cmdKey returns MD5(uuid || cmdKeySalt), the key everything of the
// request header is derived from.
func cmdKey(id [16]byte) [16]byte {
	h := md5.New()
	h.Write(id[:])
	h.Write([]byte(cmdKeySalt))
	var k [16]byte
	h.Sum(k[:0])
	return k
}

// kdf is VMess's key derivation: HMAC-SHA256 keyed kdfRoot, wrapped in
// one HMAC per label, each using the one inside it as its hash function
// (the last label outermost), run over key.
func kdf(key []byte, labels ...[]byte) [32]byte {
	mk := func() hash.Hash { return hmac.New(sha256.New, []byte(kdfRoot)) }
	for _, l := range labels {
		inner, label := mk, l
		mk = func() hash.Hash { return hmac.New(inner, label) }
	}
	h := mk()
	h.Write(key)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// kdf16 is the first 16 bytes of kdf.
func kdf16(key []byte, labels ...[]byte) []byte {
	k := kdf(key, labels...)
	return k[:16]
}

// authID returns the encrypted auth id for time ts (Unix seconds): AES-128
// (key derived from the command key) of ts, 4 random bytes and the CRC32
// of those 12 bytes.
func authID(ck *[16]byte, ts int64, rnd [4]byte) [16]byte {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], uint64(ts))
	copy(b[8:12], rnd[:])
	binary.BigEndian.PutUint32(b[12:], crc32.ChecksumIEEE(b[:12]))
	blk, _ := aes.NewCipher(kdf16(ck[:], []byte(labelAuthID)))
	blk.Encrypt(b[:], b[:])
	return b
}

func gcm(key []byte) cipher.AEAD {
	blk, err := aes.NewCipher(key)
	if err != nil {
		panic(err) // keys here are always 16 bytes
	}
	a, err := cipher.NewGCM(blk)
	if err != nil {
		panic(err)
	}
	return a
}

// sealHeader appends the AEAD-sealed request header: auth id, sealed
// length, connection nonce, sealed header (Xray's SealVMessAEADHeader).
func sealHeader(b []byte, ck *[16]byte, ts int64, plain []byte) []byte {
	var rnd [4]byte
	var nonce [8]byte
	rand.Read(rnd[:])
	rand.Read(nonce[:])
	return sealHeaderWith(b, ck, ts, rnd, nonce, plain)
}

// sealHeaderWith is sealHeader with its random parts given (for tests).
func sealHeaderWith(b []byte, ck *[16]byte, ts int64, rnd [4]byte, nonce [8]byte, plain []byte) []byte {
	id := authID(ck, ts, rnd)
	var l [2]byte
	binary.BigEndian.PutUint16(l[:], uint16(len(plain)))
	b = append(b, id[:]...)
	lk := kdf16(ck[:], []byte(labelHeaderLenKey), id[:], nonce[:])
	ln := kdf(ck[:], []byte(labelHeaderLenIV), id[:], nonce[:])
	b = gcm(lk).Seal(b, ln[:12], l[:], id[:])
	b = append(b, nonce[:]...)
	hk := kdf16(ck[:], []byte(labelHeaderKey), id[:], nonce[:])
	hn := kdf(ck[:], []byte(labelHeaderIV), id[:], nonce[:])
	return gcm(hk).Seal(b, hn[:12], plain, id[:])
}

// request is what the request header says besides the destination.
type request struct {
	iv, key  [16]byte // body IV and key of the request direction
	v        byte     // response authentication byte, echoed by the server
	opt      byte
	security byte
	cmd      byte
	padLen   int // 0-15 random bytes before the checksum
}

// appendHeader appends the request header in clear: version 1, body IV
// and key, V, options, padding length and cipher, command, port, address,
// padding, FNV-1a of all before.
func appendHeader(b []byte, r *request, dst flow.Addr) ([]byte, error) {
	start := len(b)
	b = append(b, 1)
	b = append(b, r.iv[:]...)
	b = append(b, r.key[:]...)
	b = append(b, r.v, r.opt, byte(r.padLen<<4)|r.security, 0, r.cmd)
	b = binary.BigEndian.AppendUint16(b, dst.Port)
	b, err := dst.AppendHost(b, flow.AddrTypes{IPv4: atypIPv4, Name: atypDomain, IPv6: atypIPv6})
	if err != nil {
		return nil, fmt.Errorf("vmess: %w", err)
	}
	if r.padLen > 0 {
		pad := len(b)
		b = append(b, make([]byte, r.padLen)...)
		rand.Read(b[pad:])
	}
	h := fnv.New32a()
	h.Write(b[start:])
	return binary.BigEndian.AppendUint32(b, h.Sum32()), nil
}

// respKeys returns the response direction's body key and IV: the first 16
// bytes of SHA-256 of the request's.
func respKeys(r *request) (key, iv [16]byte) {
	k := sha256.Sum256(r.key[:])
	i := sha256.Sum256(r.iv[:])
	copy(key[:], k[:16])
	copy(iv[:], i[:16])
	return key, iv
}

// respHeaderLen is the sealed length that starts a response.
const respHeaderLen = 2 + 16

// ErrResponse is a response header that does not open with the keys of
// the request or does not echo its V byte: the server is not a VMess
// server for this user, or the stream was corrupted.
var ErrResponse = errors.New("vmess: bad response header")

// openRespLen opens the sealed length of the response header in place
// and returns the length of the sealed header that follows (tag included).
func openRespLen(key, iv *[16]byte, b []byte) (int, error) {
	k := kdf16(key[:], []byte(labelRespLenKey))
	n := kdf(iv[:], []byte(labelRespLenIV))
	l, err := gcm(k).Open(b[:0], n[:12], b[:respHeaderLen], nil)
	if err != nil {
		return 0, ErrResponse
	}
	return int(binary.BigEndian.Uint16(l)) + 16, nil
}

// openRespHeader opens the sealed response header in place and checks it:
// V must be the request's, and a dynamic-port command (the only one
// defined) is ignored.
func openRespHeader(key, iv *[16]byte, v byte, b []byte) error {
	k := kdf16(key[:], []byte(labelRespKey))
	n := kdf(iv[:], []byte(labelRespIV))
	h, err := gcm(k).Open(b[:0], n[:12], b, nil)
	if err != nil {
		return ErrResponse
	}
	if len(h) < 4 {
		return fmt.Errorf("%w: %d bytes", ErrResponse, len(h))
	}
	if h[0] != v {
		return fmt.Errorf("%w: authentication byte does not match", ErrResponse)
	}
	if int(h[3]) > len(h)-4 {
		return fmt.Errorf("%w: command of %d bytes in %d", ErrResponse, h[3], len(h)-4)
	}
	return nil
}
