package sniff

import "bytes"

// maxHTTPHead bounds how many bytes HTTP waits for before giving up on
// finding the Host header.
const maxHTTPHead = 16 << 10

var httpMethods = [...]string{"GET", "POST", "PUT", "HEAD", "DELETE", "OPTIONS", "PATCH", "CONNECT", "TRACE"}

// HTTP returns the host of the HTTP/1.x request at the start of b, taken
// from its Host header without the port (and without the brackets of an
// IPv6 literal). It returns ErrNeedMore while the request line or headers
// are incomplete and ErrNoHost when the headers end without a Host.
func HTTP(b []byte) (string, error) {
	if len(b) == 0 {
		return "", ErrNeedMore
	}
	matched, partial := false, false
	for _, m := range httpMethods {
		if len(b) > len(m) {
			if string(b[:len(m)]) == m && b[len(m)] == ' ' {
				matched = true
				break
			}
		} else if string(b) == m[:len(b)] {
			partial = true
		}
	}
	if !matched {
		if partial {
			return "", ErrNeedMore
		}
		return "", ErrNoMatch
	}
	if len(b) > maxHTTPHead {
		b = b[:maxHTTPHead]
	}
	full := len(b) == maxHTTPHead
	// Request line: METHOD SP target SP HTTP/1.x
	line, rest, err := cutLine(b, full)
	if err != nil {
		return "", err
	}
	if sp := bytes.LastIndexByte(line, ' '); sp < 0 || !bytes.HasPrefix(line[sp+1:], []byte("HTTP/1.")) {
		return "", ErrNoMatch
	}
	for {
		if line, rest, err = cutLine(rest, full); err != nil {
			return "", err
		}
		if len(line) == 0 {
			return "", ErrNoHost
		}
		if len(line) < 5 || !asciiEqualFold(line[:5], "host:") {
			continue
		}
		v := bytes.Trim(line[5:], " \t")
		host, ok := cleanHost(stripPort(v))
		if !ok {
			return "", ErrNoMatch
		}
		return host, nil
	}
}

// cutLine cuts the first line of the head off b, without its CR LF. With
// no whole line left it returns ErrNeedMore, or ErrNoMatch when the head is
// full (maxHTTPHead read) and so never gets one.
func cutLine(b []byte, full bool) (line, rest []byte, err error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if full {
			return nil, nil, ErrNoMatch
		}
		return nil, nil, ErrNeedMore
	}
	return bytes.TrimSuffix(b[:i], []byte{'\r'}), b[i+1:], nil
}

// stripPort removes a ":port" suffix and the brackets around an IPv6
// literal from a Host header value.
func stripPort(v []byte) []byte {
	if len(v) > 0 && v[0] == '[' {
		if j := bytes.IndexByte(v, ']'); j > 0 {
			return v[1:j]
		}
		return v
	}
	if j := bytes.IndexByte(v, ':'); j >= 0 && bytes.IndexByte(v[j+1:], ':') < 0 {
		return v[:j]
	}
	return v
}

// asciiEqualFold compares b to the lower-case ASCII string s, ignoring case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c := b[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}
