package process

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

// pcb is one socket of a pcblist_n the tests build.
type pcb struct {
	local    string // "addr:port"
	vflag    byte
	pid, uid uint32
}

// record is a pcblist_n record of kind and n bytes, its filler bytes set
// to what the parser must not read, padded to 8 bytes.
func record(kind uint32, n int) []byte {
	b := make([]byte, (n+7)&^7)
	for i := range b {
		b[i] = 0xEE
	}
	binary.LittleEndian.PutUint32(b, uint32(n))
	binary.LittleEndian.PutUint32(b[4:], kind)
	return b
}

// buildPcbList lays sockets out as xnu's tcp_pcblist_n does: xinpgen, then
// per socket xinpcb_n (104 bytes), xsocket_n (80), two xsockbuf_n (32), an
// xsockstat_n and an xtcpcb_n (of other kinds), then a closing xinpgen.
func buildPcbList(socks ...pcb) []byte {
	gen := func() []byte {
		b := make([]byte, 24)
		binary.LittleEndian.PutUint32(b, 24)
		binary.LittleEndian.PutUint32(b[4:], uint32(len(socks)))
		return b
	}
	buf := gen()
	for _, s := range socks {
		ap := netip.MustParseAddrPort(s.local)
		inp := record(xsoInpcb, 104)
		binary.BigEndian.PutUint16(inp[inpcbLport:], ap.Port())
		binary.BigEndian.PutUint16(inp[16:], 443) // inp_fport
		inp[inpcbVflag] = s.vflag
		if ap.Addr().Is4() {
			a := ap.Addr().As4()
			clear(inp[inpcbLaddr : inpcbLaddr+12])
			copy(inp[inpcbLaddr+12:], a[:])
		} else {
			a := ap.Addr().As16()
			copy(inp[inpcbLaddr:], a[:])
		}
		so := record(xsoSocket, 80)
		binary.LittleEndian.PutUint32(so[xsoUID:], s.uid)
		binary.LittleEndian.PutUint32(so[xsoLastPID:], s.pid)
		buf = append(buf, inp...)
		buf = append(buf, so...)
		buf = append(buf, record(0x002, 32)...)
		buf = append(buf, record(0x004, 32)...)
		buf = append(buf, record(0x008, 404)...)
		buf = append(buf, record(0x020, 196)...)
	}
	return append(buf, gen()...)
}

func TestFindPcbOwner(t *testing.T) {
	for _, tc := range []struct {
		name  string
		socks []pcb
		src   string
		want  pcbOwner
		err   error
	}{
		{"ipv4 exact", []pcb{{"127.0.0.1:80", inpIPv4, 1, 0}, {"127.0.0.1:50000", inpIPv4, 812, 501}}, "127.0.0.1:50000", pcbOwner{812, 501}, nil},
		{"ipv4 exact beats wildcard", []pcb{{"0.0.0.0:50000", inpIPv4, 5, 0}, {"192.168.1.9:50000", inpIPv4, 6, 501}}, "192.168.1.9:50000", pcbOwner{6, 501}, nil},
		{"ipv4 wildcard", []pcb{{"0.0.0.0:5353", inpIPv4, 5, 0}}, "10.0.0.3:5353", pcbOwner{5, 0}, nil},
		{"dual-stack socket on ipv4", []pcb{{"10.0.0.3:61000", inpIPv4 | inpIPv6, 77, 501}}, "10.0.0.3:61000", pcbOwner{77, 501}, nil},
		{"ipv6", []pcb{{"[2001:db8::7]:61000", inpIPv6, 99, 501}}, "[2001:db8::7]:61000", pcbOwner{99, 501}, nil},
		{"other port", []pcb{{"127.0.0.1:50000", inpIPv4, 812, 501}}, "127.0.0.1:50001", pcbOwner{}, ErrNotFound},
		{"pid 0 passed over", []pcb{{"127.0.0.1:50000", inpIPv4, 0, 0}}, "127.0.0.1:50000", pcbOwner{}, ErrNotFound},
		{"no address family", []pcb{{"127.0.0.1:50000", 0, 3, 0}}, "127.0.0.1:50000", pcbOwner{}, ErrNotFound},
		{"empty", nil, "127.0.0.1:1", pcbOwner{}, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := findPcbOwner(buildPcbList(tc.socks...), netip.MustParseAddrPort(tc.src))
			if !errors.Is(err, tc.err) || got != tc.want {
				t.Errorf("findPcbOwner = %+v, %v; want %+v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestFindPcbOwnerMalformed(t *testing.T) {
	full := buildPcbList(pcb{"127.0.0.1:1", inpIPv4, 1, 0}, pcb{"127.0.0.1:2", inpIPv4, 2, 0})
	src := netip.MustParseAddrPort("127.0.0.1:2")
	if o, err := findPcbOwner(full, src); err != nil || o.pid != 2 {
		t.Fatalf("the whole list: %+v, %v", o, err)
	}
	// Cut between records (the closing xinpgen is missing) and inside them
	// (a length runs past the end), looking for a socket that is not
	// there, so that the whole list is read.
	absent := netip.MustParseAddrPort("127.0.0.1:3")
	if _, err := findPcbOwner(full, absent); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the whole list, an absent socket: %v", err)
	}
	const sock = 104 + 80 + 32 + 32 + 408 + 200
	for _, n := range []int{0, 7, 24, 24 + 104, 24 + sock, 24 + sock + 50, 24 + sock + 104 + 40, len(full) - 24, len(full) - 10, len(full) - 1} {
		if _, err := findPcbOwner(full[:n], absent); !errors.Is(err, errBadTable) {
			t.Errorf("cut at %d of %d: %v; want a malformed table", n, len(full), err)
		}
	}
	zero := append(buildPcbList(), make([]byte, 16)...) // a record of length 0
	if _, err := findPcbOwner(zero, src); !errors.Is(err, errBadTable) {
		t.Errorf("a zero-length record: %v", err)
	}
}

func TestExecPath(t *testing.T) {
	args := func(s string) []byte { return append([]byte{2, 0, 0, 0}, s...) }
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{args("/Applications/Firefox.app/Contents/MacOS/firefox\x00\x00\x00firefox\x00-P\x00"), "/Applications/Firefox.app/Contents/MacOS/firefox"},
		{args("/usr/bin/curl\x00"), "/usr/bin/curl"},
	} {
		if got, err := execPath(tc.in); err != nil || got != tc.want {
			t.Errorf("execPath(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range [][]byte{nil, {1, 0, 0}, args(""), args("\x00"), args("/no/terminator"), args("relative\x00")} {
		if got, err := execPath(bad); !errors.Is(err, errBadTable) {
			t.Errorf("execPath(%q) = %q, %v; want a malformed answer", bad, got, err)
		}
	}
}

func FuzzFindPcbOwner(f *testing.F) {
	f.Add(buildPcbList(pcb{"127.0.0.1:50000", inpIPv4, 812, 501}), "127.0.0.1:50000")
	f.Add(buildPcbList(pcb{"[2001:db8::7]:61000", inpIPv6, 99, 501}, pcb{"0.0.0.0:53", inpIPv4, 4, 0}), "10.0.0.1:53")
	f.Add([]byte{24, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 16, 0, 0, 0}, "127.0.0.1:1")
	f.Fuzz(func(t *testing.T, buf []byte, src string) {
		ap, err := netip.ParseAddrPort(src)
		if err != nil {
			return
		}
		o, err := findPcbOwner(buf, ap)
		if err != nil && o != (pcbOwner{}) {
			t.Errorf("%+v with error %v", o, err)
		}
		if err == nil && o.pid == 0 {
			t.Errorf("pid 0 found")
		}
		if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, errBadTable) {
			t.Errorf("unexpected error %v", err)
		}
	})
}

func FuzzExecPath(f *testing.F) {
	f.Add([]byte("\x01\x00\x00\x00/usr/bin/curl\x00\x00curl\x00"))
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, buf []byte) {
		if p, err := execPath(buf); err == nil && (p == "" || p[0] != '/') {
			t.Errorf("execPath = %q", p)
		}
	})
}
