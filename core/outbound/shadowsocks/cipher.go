package shadowsocks

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/md5"
	"crypto/sha1"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/crypto/chacha20poly1305"
	"lukechampine.com/blake3"
)

// method is one Shadowsocks cipher.
type method struct {
	name    string
	keyLen  int  // key (classic) or PSK (2022) length; also the salt length
	is2022  bool // SIP022; else SIP004 AEAD
	aes     bool // AES-GCM; else ChaCha20-Poly1305 (x: XChaCha20)
	xchacha bool // classic xchacha20-ietf-poly1305
}

// methods are the ciphers Skiff speaks. Stream ciphers and "none" are
// refused by New with a reason of their own.
var methods = map[string]*method{
	"aes-128-gcm":                   {name: "aes-128-gcm", keyLen: 16, aes: true},
	"aes-192-gcm":                   {name: "aes-192-gcm", keyLen: 24, aes: true},
	"aes-256-gcm":                   {name: "aes-256-gcm", keyLen: 32, aes: true},
	"chacha20-ietf-poly1305":        {name: "chacha20-ietf-poly1305", keyLen: 32},
	"xchacha20-ietf-poly1305":       {name: "xchacha20-ietf-poly1305", keyLen: 32, xchacha: true},
	"2022-blake3-aes-128-gcm":       {name: "2022-blake3-aes-128-gcm", keyLen: 16, is2022: true, aes: true},
	"2022-blake3-aes-256-gcm":       {name: "2022-blake3-aes-256-gcm", keyLen: 32, is2022: true, aes: true},
	"2022-blake3-chacha20-poly1305": {name: "2022-blake3-chacha20-poly1305", keyLen: 32, is2022: true},
}

// refused names the methods Skiff knows of and will not speak, with why.
func refused(name string) (string, bool) {
	switch name {
	case "none", "plain", "dummy":
		return "method \"none\" sends traffic unencrypted and unauthenticated; Skiff refuses it", true
	case "rc4", "rc4-md5", "aes-128-cfb", "aes-192-cfb", "aes-256-cfb", "aes-128-ctr", "aes-192-ctr", "aes-256-ctr",
		"camellia-128-cfb", "camellia-192-cfb", "camellia-256-cfb", "bf-cfb", "cast5-cfb", "des-cfb", "idea-cfb",
		"rc2-cfb", "seed-cfb", "salsa20", "chacha20", "chacha20-ietf", "xchacha20":
		return fmt.Sprintf("stream cipher %q is deprecated and insecure (no integrity, replayable); Skiff speaks only the AEAD and 2022 methods", name), true
	}
	return "", false
}

// newAEAD returns the AEAD of m keyed with key (a session subkey).
func (m *method) newAEAD(key []byte) (cipher.AEAD, error) {
	switch {
	case m.aes:
		b, err := aes.NewCipher(key)
		if err != nil {
			return nil, err
		}
		return cipher.NewGCM(b)
	case m.xchacha:
		return chacha20poly1305.NewX(key)
	default:
		return chacha20poly1305.New(key)
	}
}

// Key derivation contexts of SIP022 and the subkey info of SIP004.
const (
	ctxSession  = "shadowsocks 2022 session subkey"
	ctxIdentity = "shadowsocks 2022 identity subkey"
	infoSubkey  = "ss-subkey"
)

// subkey derives the session key for salt: BLAKE3 derive_key over
// PSK||salt for 2022, HKDF-SHA1 for the classic methods. out must hold
// keyLen bytes; scratch is reused for the key material.
func (m *method) subkey(out, key, salt []byte) error {
	if m.is2022 {
		var km [64]byte
		n := copy(km[:], key)
		n += copy(km[n:], salt)
		blake3.DeriveKey(out, ctxSession, km[:n])
		return nil
	}
	k, err := hkdf.Key(sha1.New, key, salt, infoSubkey, len(out))
	if err != nil {
		return err
	}
	copy(out, k)
	return nil
}

// aeadFor derives the subkey for salt and returns its AEAD.
func (m *method) aeadFor(key, salt []byte) (cipher.AEAD, error) {
	var sk [32]byte
	if err := m.subkey(sk[:m.keyLen], key, salt); err != nil {
		return nil, err
	}
	return m.newAEAD(sk[:m.keyLen])
}

// evpBytesToKey is OpenSSL's EVP_BytesToKey with MD5, one iteration and no
// salt: how the classic methods turn a password into a key.
func evpBytesToKey(password string, keyLen int) []byte {
	var key, prev []byte
	for len(key) < keyLen {
		h := md5.New()
		h.Write(prev)
		h.Write([]byte(password))
		prev = h.Sum(nil)
		key = append(key, prev...)
	}
	return key[:keyLen]
}

// errBadPSK does not quote the password: it is the credential.
var errBadPSK = errors.New("password: a 2022 method needs base64 of a key of the method's length (several joined by ':' for a multi-user server)")

// keys are the credentials of a client: for 2022 the user PSK and, on a
// multi-user server, the identity PSKs in front of it (iPSK1:…:uPSK); for
// the classic methods the key derived from the password.
type keys struct {
	user      []byte         // uPSK, or the classic key
	identity  [][]byte       // iPSK1…iPSKn (2022 AES only)
	idHash    [][16]byte     // BLAKE3(next PSK)[0:16] for each identity PSK
	idBlocks  []cipher.Block // AES keyed by each identity PSK (UDP)
	userBlock cipher.Block   // AES keyed by the user PSK (UDP separate header)
}

func parseKeys(m *method, password string) (*keys, error) {
	if !m.is2022 {
		if password == "" {
			return nil, errors.New("password: empty")
		}
		return &keys{user: evpBytesToKey(password, m.keyLen)}, nil
	}
	parts := strings.Split(password, ":")
	psks := make([][]byte, len(parts))
	for i, p := range parts {
		b, err := base64.StdEncoding.DecodeString(p)
		if err != nil || len(b) != m.keyLen {
			return nil, errBadPSK
		}
		psks[i] = b
	}
	k := &keys{user: psks[len(psks)-1], identity: psks[:len(psks)-1]}
	if len(k.identity) > 0 && !m.aes {
		return nil, fmt.Errorf("password: the multi-user form iPSK:uPSK needs an AES method, not %s", m.name)
	}
	for i := range k.identity {
		h := blake3.Sum256(psks[i+1])
		k.idHash = append(k.idHash, [16]byte(h[:16]))
		b, err := aes.NewCipher(k.identity[i])
		if err != nil {
			return nil, err
		}
		k.idBlocks = append(k.idBlocks, b)
	}
	if m.aes {
		b, err := aes.NewCipher(k.user)
		if err != nil {
			return nil, err
		}
		k.userBlock = b
	}
	return k, nil
}

// separateHeaderBlock is the AES block cipher that encrypts the separate
// header of a 2022 UDP request: the first identity PSK's, else the user's.
func (k *keys) separateHeaderBlock() cipher.Block {
	if len(k.idBlocks) > 0 {
		return k.idBlocks[0]
	}
	return k.userBlock
}

// increment adds one to a little-endian counter nonce.
func increment(nonce []byte) {
	for i := range nonce {
		nonce[i]++
		if nonce[i] != 0 {
			return
		}
	}
}
