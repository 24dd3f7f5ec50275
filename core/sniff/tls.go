package sniff

import "sync"

const (
	recordTypeHandshake  = 0x16
	handshakeClientHello = 0x01
	maxRecordLen         = 16384 + 2048 // TLSCiphertext bound (RFC 8446 section 5.2)
	maxClientHelloLen    = 64 << 10     // larger hellos are not worth buffering for a sniff
	extensionServerName  = 0x0000
	serverNameTypeHost   = 0x00
)

// helloPool holds buffers for reassembling a ClientHello that spans several
// TLS records (the common single-record case is parsed in place).
var helloPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// TLS returns the server name (SNI) of the TLS ClientHello at the start of
// b, which holds the first bytes of a stream. The ClientHello may span
// several TLS records; while it is incomplete TLS returns ErrNeedMore.
func TLS(b []byte) (string, error) {
	if len(b) == 0 {
		return "", ErrNeedMore
	}
	// Fast path: the whole ClientHello sits in the first record.
	if len(b) >= 9 && b[0] == recordTypeHandshake {
		rl := int(b[3])<<8 | int(b[4])
		hl := int(b[6])<<16 | int(b[7])<<8 | int(b[8])
		if validRecordHeader(b) && b[5] == handshakeClientHello && 4+hl <= rl && 5+rl <= len(b) {
			return clientHelloSNI(b[9 : 9+hl])
		}
	}
	var bufp *[]byte
	defer func() {
		if bufp != nil {
			helloPool.Put(bufp)
		}
	}()
	var msg []byte
	rest := b
	for {
		if len(rest) < 5 {
			// A record header cut short: check what there is of it.
			if len(rest) >= 1 && rest[0] != recordTypeHandshake ||
				len(rest) >= 2 && rest[1] != 3 ||
				len(rest) >= 3 && rest[2] > 4 {
				return "", ErrNoMatch
			}
			return "", ErrNeedMore
		}
		if !validRecordHeader(rest) {
			return "", ErrNoMatch
		}
		rl := int(rest[3])<<8 | int(rest[4])
		avail := rest[5:]
		take := min(rl, len(avail))
		if bufp == nil {
			bufp = helloPool.Get().(*[]byte)
			msg = (*bufp)[:0]
		}
		msg = append(msg, avail[:take]...)
		*bufp = msg[:0] // keep the grown buffer for the pool
		if len(msg) >= 1 && msg[0] != handshakeClientHello {
			return "", ErrNoMatch
		}
		if len(msg) >= 4 {
			hl := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
			if hl > maxClientHelloLen {
				return "", ErrNoMatch
			}
			if len(msg) >= 4+hl {
				return clientHelloSNI(msg[4 : 4+hl])
			}
		}
		if take < rl {
			return "", ErrNeedMore
		}
		rest = avail[rl:]
	}
}

// validRecordHeader checks the 5-byte header of a handshake record.
func validRecordHeader(h []byte) bool {
	rl := int(h[3])<<8 | int(h[4])
	return h[0] == recordTypeHandshake && h[1] == 3 && h[2] <= 4 && rl > 0 && rl <= maxRecordLen
}

// clientHelloSNI parses the body of a ClientHello handshake message (after
// its 4-byte header) and returns the host_name of its server_name extension.
func clientHelloSNI(body []byte) (string, error) {
	r := reader{b: body}
	if v := r.u8(); v != 3 {
		return "", ErrNoMatch
	}
	r.u8()        // legacy_version minor
	r.bytes(32)   // random
	sid := r.u8() // legacy_session_id
	if sid > 32 {
		return "", ErrNoMatch
	}
	r.bytes(int(sid))
	cs := r.u16()
	if cs%2 != 0 {
		return "", ErrNoMatch
	}
	r.bytes(cs)
	r.bytes(int(r.u8())) // compression methods
	if r.bad {
		return "", ErrNoMatch
	}
	if len(r.b) == 0 {
		return "", ErrNoHost // no extensions at all
	}
	sni, err := findEntry(&r, extensionServerName, true) // in the extensions
	if err != nil {
		return "", err
	}
	name, err := findEntry(&reader{b: sni}, serverNameTypeHost, false) // in its server names
	if err != nil {
		return "", err
	}
	host, ok := cleanHost(name)
	if !ok {
		return "", ErrNoMatch
	}
	return host, nil
}

// findEntry reads a list with a 16-bit length from r (the extensions, the
// server names) up to the first entry of type want, and returns its body.
// Each entry is a type (a byte, or two when wide) and a body with a 16-bit
// length. The error is ErrNoMatch when the list is malformed before that
// entry and ErrNoHost when it has none.
func findEntry(r *reader, want int, wide bool) ([]byte, error) {
	list := reader{b: r.bytes(r.u16())}
	if r.bad {
		return nil, ErrNoMatch
	}
	for len(list.b) > 0 {
		var typ int
		if wide {
			typ = list.u16()
		} else {
			typ = int(list.u8())
		}
		body := list.bytes(list.u16())
		if list.bad {
			return nil, ErrNoMatch
		}
		if typ == want {
			return body, nil
		}
	}
	return nil, ErrNoHost
}
