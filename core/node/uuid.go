package node

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
)

// UUID is a user id of VLESS, VMess and TUIC.
type UUID [16]byte

// ErrBadUUID is ParseUUID's error. It does not repeat the input: a user id
// is a credential.
var ErrBadUUID = errors.New("uuid: want a UUID (32 hex digits, dashes optional) or a name of 1-30 characters")

// ParseUUID parses a user id as Xray does: the canonical form
// (xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx) or 32 hex digits; any other string
// of 1 to 30 bytes names the UUIDv5 of that string in the nil namespace
// (SHA-1, as Xray's common/uuid and sing-box derive it). Errors never quote s.
func ParseUUID(s string) (UUID, error) {
	var u UUID
	switch l := len(s); {
	case l == 36:
		if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
			return u, ErrBadUUID
		}
		s = s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:]
		fallthrough
	case l == 32:
		if _, err := hex.Decode(u[:], []byte(s)); err != nil {
			return UUID{}, ErrBadUUID
		}
		return u, nil
	case l >= 1 && l <= 30:
		h := sha1.New()
		h.Write(u[:]) // the nil namespace
		h.Write([]byte(s))
		copy(u[:], h.Sum(nil))
		u[6] = u[6]&0x0f | 0x50 // version 5
		u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
		return u, nil
	}
	return u, ErrBadUUID
}
