package process

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// This file reads the socket tables that Windows's iphlpapi returns
// (GetExtendedTcpTable with TCP_TABLE_OWNER_PID_ALL, GetExtendedUdpTable with
// UDP_TABLE_OWNER_PID). It is plain byte parsing, kept free of build tags so
// that its tests and fuzz target run everywhere.
//
// Each table is a DWORD row count followed by rows of DWORDs (4-byte
// aligned, no padding). DWORDs are little-endian (every Windows CPU is);
// addresses are in network order, and a port is the first two bytes of its
// DWORD, big-endian.

// ownerTable names one of the four layouts.
type ownerTable int

const (
	tcp4Table ownerTable = iota // MIB_TCPTABLE_OWNER_PID
	tcp6Table                   // MIB_TCP6TABLE_OWNER_PID
	udp4Table                   // MIB_UDPTABLE_OWNER_PID
	udp6Table                   // MIB_UDP6TABLE_OWNER_PID
)

// layout is where a row keeps what a look-up needs.
type layout struct {
	row, addr, addrLen, port, pid int
}

var layouts = [...]layout{
	// dwState, dwLocalAddr, dwLocalPort, dwRemoteAddr, dwRemotePort, dwOwningPid
	tcp4Table: {row: 24, addr: 4, addrLen: 4, port: 8, pid: 20},
	// ucLocalAddr[16], dwLocalScopeId, dwLocalPort, ucRemoteAddr[16],
	// dwRemoteScopeId, dwRemotePort, dwState, dwOwningPid
	tcp6Table: {row: 56, addr: 0, addrLen: 16, port: 20, pid: 52},
	// dwLocalAddr, dwLocalPort, dwOwningPid
	udp4Table: {row: 12, addr: 0, addrLen: 4, port: 4, pid: 8},
	// ucLocalAddr[16], dwLocalScopeId, dwLocalPort, dwOwningPid
	udp6Table: {row: 28, addr: 0, addrLen: 16, port: 20, pid: 24},
}

var errBadTable = errors.New("process: malformed socket table")

// findOwner returns the PID of the socket in table buf whose local address
// is src: the one bound to src's address, else one bound to the wildcard
// address with src's port. Rows of PID 0 (no process) are passed over. It
// returns ErrNotFound if there is none, and an
// error wrapping errBadTable if buf is shorter than its row count says.
func findOwner(buf []byte, t ownerTable, src netip.AddrPort) (uint32, error) {
	l := layouts[t]
	if len(buf) < 4 {
		return 0, fmt.Errorf("%w: %d bytes", errBadTable, len(buf))
	}
	n := uint64(binary.LittleEndian.Uint32(buf))
	rows := buf[4:]
	if n > uint64(len(rows)/l.row) {
		return 0, fmt.Errorf("%w: %d rows in %d bytes", errBadTable, n, len(buf))
	}
	m := matcher[uint32]{src: src}
	for i := range int(n) {
		r := rows[i*l.row : (i+1)*l.row]
		var a netip.Addr
		if l.addrLen == 4 {
			a = netip.AddrFrom4([4]byte(r[l.addr : l.addr+4]))
		} else {
			a = netip.AddrFrom16([16]byte(r[l.addr : l.addr+16]))
		}
		local := netip.AddrPortFrom(a, binary.BigEndian.Uint16(r[l.port:]))
		pid := binary.LittleEndian.Uint32(r[l.pid:])
		if pid == 0 {
			// No process holds it: a TCP socket in TIME_WAIT (Wine also
			// reports 0 for the IPv6 sockets of its programs).
			continue
		}
		if m.offer(local, pid) {
			break
		}
	}
	if v, ok := m.best(); ok {
		return v, nil
	}
	return 0, ErrNotFound
}

// matcher picks, among a system's sockets, the one that sent a flow from
// src: the socket bound to src itself, else one bound to the wildcard
// address and src's port (a UDP socket bound to it sends from whichever
// address the route picks). Every system's look-up uses it.
type matcher[T any] struct {
	src         netip.AddrPort
	exact, wild T
	found, any  bool
}

// offer considers a socket bound to local, known by v (an inode, a PID);
// it reports true once the exact socket is found.
func (m *matcher[T]) offer(local netip.AddrPort, v T) bool {
	if local.Port() != m.src.Port() {
		return false
	}
	if local.Addr().Unmap() == m.src.Addr().Unmap() {
		m.exact, m.found = v, true
		return true
	}
	if local.Addr().IsUnspecified() && !m.any {
		m.wild, m.any = v, true
	}
	return false
}

// best is the socket found: the exact one, else the wildcard one.
func (m *matcher[T]) best() (T, bool) {
	if m.found {
		return m.exact, true
	}
	return m.wild, m.any
}
