// Package hostname is Skiff's one rule for the host names it keys by (fake
// addresses, DNS questions, rule sets): dot-separated labels of 1 to 63
// ASCII letters, digits, '-' or '_', at most 253 bytes in all, kept in
// lower case without the trailing dot.
package hostname

import "strings"

// Canonical returns name in canonical form: lower case, without the
// trailing dot. ok is false unless it is a host name.
func Canonical(name string) (canonical string, ok bool) {
	name = strings.TrimSuffix(name, ".")
	if !Valid(name) {
		return "", false
	}
	return strings.ToLower(name), true // ToLower returns name itself when it is lower case already
}

// CanonicalBytes is Canonical for a name read from the wire, allocating
// only the returned string.
func CanonicalBytes(b []byte) (canonical string, ok bool) {
	if len(b) > 0 && b[len(b)-1] == '.' {
		b = b[:len(b)-1]
	}
	if !Valid(b) {
		return "", false
	}
	return Lower(b), true
}

// Valid reports whether name is a host name, in any case and without the
// trailing dot.
func Valid[T string | []byte](name T) bool {
	if len(name) == 0 || len(name) > 253 {
		return false
	}
	label := 0
	for i := range len(name) {
		c := name[i]
		switch {
		case c == '.':
			if label == 0 {
				return false
			}
			label = 0
			continue
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
		label++
		if label > 63 {
			return false
		}
	}
	return label > 0
}

// Lower returns b as a string with its ASCII letters in lower case, in
// one allocation.
func Lower(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for _, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		sb.WriteByte(c)
	}
	return sb.String()
}
