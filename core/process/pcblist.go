package process

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net/netip"
	"path"
)

// This file reads what macOS's sysctls return: the socket lists
// net.inet.tcp.pcblist_n and net.inet.udp.pcblist_n, and a process's
// kern.procargs2. Plain byte parsing, free of build tags, so that its tests
// and fuzz targets run everywhere.
//
// A pcblist_n is a struct xinpgen, then for each socket a run of records
// (struct xinpcb_n, xsocket_n, the socket buffers' and statistics', for TCP
// xtcpcb_n), then a closing xinpgen. Every record starts with its length
// and kind (two uint32s) and is padded to 8 bytes; the structs are laid
// out under #pragma pack(4) (xnu's bsd/netinet/in_pcb.h and
// bsd/sys/socketvar.h). Integers are little-endian (every Mac CPU is),
// ports and addresses in network order.
const (
	xsoSocket = 0x001 // XSO_SOCKET: struct xsocket_n
	xsoInpcb  = 0x010 // XSO_INPCB: struct xinpcb_n

	xinpgenLen = 24 // struct xinpgen, which opens and closes the list

	inpIPv4 = 0x1 // INP_IPV4 in inp_vflag
	inpIPv6 = 0x2 // INP_IPV6

	// Offsets in struct xinpcb_n: inp_lport, inp_vflag, and
	// inp_dependladdr (an in6_addr, or an in_addr_4in6 whose IPv4 address
	// is its last four bytes).
	inpcbLport, inpcbVflag, inpcbLaddr, inpcbMin = 18, 44, 64, 80
	// Offsets of so_uid and so_last_pid in struct xsocket_n.
	xsoUID, xsoLastPID, xsoMin = 64, 68, 72
)

// pcbOwner is the process that last used a socket, and the socket's user.
type pcbOwner struct{ pid, uid uint32 }

// findPcbOwner returns the process that last used the socket of pcblist_n buf
// whose local address is src (bound to src's address, else to the wildcard
// address with src's port). It returns ErrNotFound if there is none, and an
// error wrapping errBadTable if a record's length runs past buf or the list
// lacks its end (the records after an exact match are not read).
func findPcbOwner(buf []byte, src netip.AddrPort) (pcbOwner, error) {
	m := matcher[pcbOwner]{src: src}
	var local netip.AddrPort
	inpcb := false
	off, last := 0, 0
	for ; off+8 <= len(buf); off += (last + 7) &^ 7 {
		n := int(binary.LittleEndian.Uint32(buf[off:]))
		last = n
		if n < 8 || n > len(buf)-off {
			return pcbOwner{}, fmt.Errorf("%w: a record of %d bytes at %d of %d", errBadTable, n, off, len(buf))
		}
		rec := buf[off : off+n]
		switch kind := binary.LittleEndian.Uint32(rec[4:]); {
		case kind == xsoInpcb && n >= inpcbMin:
			var a netip.Addr
			switch vflag := rec[inpcbVflag]; {
			case vflag&inpIPv4 != 0:
				a = netip.AddrFrom4([4]byte(rec[inpcbLaddr+12 : inpcbLaddr+16]))
			case vflag&inpIPv6 != 0:
				a = netip.AddrFrom16([16]byte(rec[inpcbLaddr : inpcbLaddr+16]))
			}
			local, inpcb = netip.AddrPortFrom(a, binary.BigEndian.Uint16(rec[inpcbLport:])), a.IsValid()
		case kind == xsoSocket && n >= xsoMin && inpcb:
			inpcb = false
			o := pcbOwner{binary.LittleEndian.Uint32(rec[xsoLastPID:]), binary.LittleEndian.Uint32(rec[xsoUID:])}
			if o.pid != 0 && m.offer(local, o) {
				return o, nil
			}
		}
	}
	// The kernel closes the list with a second xinpgen: without it the
	// list was cut short.
	if off != len(buf) || off < 2*xinpgenLen || last != xinpgenLen {
		return pcbOwner{}, fmt.Errorf("%w: the list of %d bytes has no end", errBadTable, len(buf))
	}
	if o, ok := m.best(); ok {
		return o, nil
	}
	return pcbOwner{}, ErrNotFound
}

// execPath returns the executable's path from a kern.procargs2 answer: an
// int32 argc, then the path the process was started from, NUL-terminated.
func execPath(buf []byte) (string, error) {
	if len(buf) < 4 {
		return "", fmt.Errorf("%w: kern.procargs2 of %d bytes", errBadTable, len(buf))
	}
	p, _, ok := bytes.Cut(buf[4:], []byte{0})
	if !ok || !path.IsAbs(string(p)) { // a macOS path, whatever system runs the tests
		return "", fmt.Errorf("%w: kern.procargs2 holds no path", errBadTable)
	}
	return string(p), nil
}
