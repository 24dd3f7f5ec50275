package process

import (
	"encoding/binary"
	"errors"
	"net/netip"
	"testing"
)

// row is one socket of a table the tests build.
type row struct {
	local string // "addr:port"
	pid   uint32
}

// buildTable lays rows out as iphlpapi does for table t; count is the row
// count written in the header (the real one when negative).
func buildTable(t ownerTable, count int, rows ...row) []byte {
	l := layouts[t]
	if count < 0 {
		count = len(rows)
	}
	buf := binary.LittleEndian.AppendUint32(nil, uint32(count))
	for i, r := range rows {
		ap := netip.MustParseAddrPort(r.local)
		b := make([]byte, l.row)
		for j := range b {
			b[j] = byte(0xA0 + i) // what the parser must not read: state, remote address, scope
		}
		if l.addrLen == 4 {
			a := ap.Addr().As4()
			copy(b[l.addr:], a[:])
		} else {
			a := ap.Addr().As16()
			copy(b[l.addr:], a[:])
		}
		binary.BigEndian.PutUint32(b[l.port:], uint32(ap.Port())<<16) // the port in the DWORD's first two bytes
		binary.LittleEndian.PutUint32(b[l.pid:], r.pid)
		buf = append(buf, b...)
	}
	return buf
}

func TestFindOwner(t *testing.T) {
	for _, tc := range []struct {
		name  string
		table ownerTable
		count int
		rows  []row
		src   string
		pid   uint32
		err   error
	}{
		{"tcp4 exact", tcp4Table, -1, []row{{"127.0.0.1:80", 4}, {"127.0.0.1:50000", 1234}}, "127.0.0.1:50000", 1234, nil},
		{"tcp4 other address", tcp4Table, -1, []row{{"10.0.0.2:50000", 4}}, "127.0.0.1:50000", 0, ErrNotFound},
		{"tcp4 exact beats wildcard", tcp4Table, -1, []row{{"0.0.0.0:50000", 7}, {"192.168.1.5:50000", 8}}, "192.168.1.5:50000", 8, nil},
		{"tcp4 wildcard", tcp4Table, -1, []row{{"0.0.0.0:443", 7}, {"0.0.0.0:50000", 9}}, "192.168.1.5:50000", 9, nil},
		{"tcp6 exact", tcp6Table, -1, []row{{"[::1]:8080", 1}, {"[2001:db8::5]:61000", 4242}}, "[2001:db8::5]:61000", 4242, nil},
		{"tcp6 mapped v4", tcp6Table, -1, []row{{"[::ffff:127.0.0.1]:61000", 77}}, "127.0.0.1:61000", 77, nil},
		{"udp4 wildcard", udp4Table, -1, []row{{"0.0.0.0:5353", 300}}, "10.1.2.3:5353", 300, nil},
		{"udp4 port differs", udp4Table, -1, []row{{"0.0.0.0:5353", 300}}, "10.1.2.3:5354", 0, ErrNotFound},
		{"udp6 exact", udp6Table, -1, []row{{"[::]:53", 2}, {"[fe80::1]:40000", 65536}}, "[fe80::1]:40000", 65536, nil},
		{"time-wait row of pid 0 passed over", tcp4Table, -1, []row{{"127.0.0.1:50000", 0}, {"0.0.0.0:50000", 5}}, "127.0.0.1:50000", 5, nil},
		{"only pid 0", tcp6Table, -1, []row{{"[::1]:50000", 0}}, "[::1]:50000", 0, ErrNotFound},
		{"empty table", udp6Table, -1, nil, "[::1]:1", 0, ErrNotFound},
		{"count beyond the buffer", tcp4Table, 3, []row{{"127.0.0.1:1", 1}, {"127.0.0.1:2", 2}}, "127.0.0.1:2", 0, errBadTable},
		{"huge count", udp4Table, 0xFFFFFFFF, []row{{"127.0.0.1:1", 1}}, "127.0.0.1:1", 0, errBadTable},
		{"fewer rows counted than sent", tcp6Table, 1, []row{{"[::1]:1", 1}, {"[::1]:2", 2}}, "[::1]:2", 0, ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pid, err := findOwner(buildTable(tc.table, tc.count, tc.rows...), tc.table, netip.MustParseAddrPort(tc.src))
			if !errors.Is(err, tc.err) || pid != tc.pid {
				t.Errorf("findOwner = %d, %v; want %d, %v", pid, err, tc.pid, tc.err)
			}
		})
	}
}

func TestFindOwnerTruncated(t *testing.T) {
	full := buildTable(tcp6Table, -1, row{"[::1]:1", 1}, row{"[::1]:2", 2})
	for n := range len(full) {
		if _, err := findOwner(full[:n], tcp6Table, netip.MustParseAddrPort("[::1]:2")); !errors.Is(err, errBadTable) {
			t.Errorf("%d of %d bytes: err %v; want a malformed table", n, len(full), err)
		}
	}
}

func FuzzFindOwner(f *testing.F) {
	f.Add(buildTable(tcp4Table, -1, row{"127.0.0.1:50000", 1234}), uint8(tcp4Table), "127.0.0.1:50000")
	f.Add(buildTable(tcp6Table, -1, row{"[::ffff:127.0.0.1]:61000", 77}), uint8(tcp6Table), "127.0.0.1:61000")
	f.Add(buildTable(udp4Table, 9, row{"0.0.0.0:5353", 300}), uint8(udp4Table), "10.1.2.3:5353")
	f.Add(buildTable(udp6Table, -1, row{"[fe80::1]:40000", 3}), uint8(udp6Table), "[fe80::1]:40000")
	f.Add([]byte{1, 0, 0}, uint8(udp6Table), "[::1]:1")
	f.Fuzz(func(t *testing.T, buf []byte, table uint8, src string) {
		ap, err := netip.ParseAddrPort(src)
		if err != nil {
			return
		}
		tb := ownerTable(table % uint8(len(layouts)))
		pid, err := findOwner(buf, tb, ap)
		if err != nil && pid != 0 {
			t.Errorf("pid %d with error %v", pid, err)
		}
		if err != nil && !errors.Is(err, ErrNotFound) && !errors.Is(err, errBadTable) {
			t.Errorf("unexpected error %v", err)
		}
	})
}
