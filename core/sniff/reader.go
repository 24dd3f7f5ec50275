package sniff

// reader is a bounds-checked cursor over untrusted bytes. A read past the
// end sets bad and yields zero values, so a parser checks bad once after a
// group of reads instead of after each one.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) u8() byte {
	v := r.bytes(1)
	if v == nil {
		return 0
	}
	return v[0]
}

func (r *reader) u16() int {
	v := r.bytes(2)
	if v == nil {
		return 0
	}
	return int(v[0])<<8 | int(v[1])
}

func (r *reader) u24() int {
	v := r.bytes(3)
	if v == nil {
		return 0
	}
	return int(v[0])<<16 | int(v[1])<<8 | int(v[2])
}

// bytes reads the next n bytes; nil when fewer are left.
func (r *reader) bytes(n int) []byte {
	if n < 0 || len(r.b) < n {
		r.bad = true
		r.b = nil
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// varint reads a QUIC variable-length integer (RFC 9000 section 16).
func (r *reader) varint() uint64 {
	if len(r.b) < 1 {
		r.bad = true
		return 0
	}
	n := 1 << (r.b[0] >> 6)
	if len(r.b) < n {
		r.bad = true
		r.b = nil
		return 0
	}
	v := uint64(r.b[0] & 0x3f)
	for i := 1; i < n; i++ {
		v = v<<8 | uint64(r.b[i])
	}
	r.b = r.b[n:]
	return v
}
