package process

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"sync"
)

type linuxFinder struct {
	proc string // "/proc"

	mu     sync.Mutex
	owner  map[uint64]Info // socket inode → process, from the last fd walk
	recent []Info          // the programs found last, newest first: most flows come from them
}

func newOSFinder() osFinder { return &linuxFinder{proc: "/proc", owner: map[uint64]Info{}} }

func (l *linuxFinder) find(network string, src netip.AddrPort) (Info, error) {
	var tables []string
	switch network {
	case "tcp":
		tables = []string{"net/tcp", "net/tcp6"}
	case "udp":
		tables = []string{"net/udp", "net/udp6"}
	default:
		return Info{}, fmt.Errorf("process: network %q", network)
	}
	var inode uint64
	uid := -1
	for _, t := range tables {
		var err error
		inode, uid, err = l.socket(t, src)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrNotFound) {
			return Info{}, err
		}
	}
	if inode == 0 {
		return Info{}, ErrNotFound
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if info, ok := l.owner[inode]; ok {
		return info, nil
	}
	// A new socket of a program that opened the last flows (a browser opens
	// dozens): one fd folder each, not the whole of /proc.
	for _, info := range l.recent {
		if l.holds(info.PID, inode) {
			// The PID may be another program's by now (reused, or the
			// process exec'd): its path is read again.
			exe, err := os.Readlink(l.proc + "/" + strconv.Itoa(info.PID) + "/exe")
			if err != nil {
				break
			}
			info.Path = strings.TrimSuffix(exe, " (deleted)")
			l.owner[inode] = info
			l.remember(info)
			return info, nil
		}
	}
	// Walk the fd tables again: of the socket owner's processes only.
	l.owner = l.walk(uid)
	if info, ok := l.owner[inode]; ok {
		l.remember(info)
		return info, nil
	}
	return Info{}, ErrNotFound
}

// remember puts info first among the recent programs.
func (l *linuxFinder) remember(info Info) {
	for i, r := range l.recent {
		if r.PID == info.PID {
			l.recent = append(l.recent[:i], l.recent[i+1:]...)
			break
		}
	}
	l.recent = append([]Info{info}, l.recent[:min(len(l.recent), 7)]...)
}

// holds reports whether process pid has the socket inode open.
func (l *linuxFinder) holds(pid int, inode uint64) bool {
	dir := l.proc + "/" + strconv.Itoa(pid) + "/fd/"
	fds, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	want := "socket:[" + strconv.FormatUint(inode, 10) + "]"
	for _, fd := range fds {
		if target, err := os.Readlink(dir + fd.Name()); err == nil && target == want {
			return true
		}
	}
	return false
}

// socket finds the socket whose local address is src in the table (a file
// under /proc) and returns its inode and owner.
func (l *linuxFinder) socket(table string, src netip.AddrPort) (inode uint64, uid int, err error) {
	f, err := os.Open(l.proc + "/" + table)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return 0, 0, ErrNotFound // no IPv6 on this machine
		}
		return 0, 0, fmt.Errorf("process: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	type sock struct {
		inode uint64
		uid   int
	}
	m := matcher[sock]{src: src}
	for sc.Scan() {
		fields := bytes.Fields(sc.Bytes())
		if len(fields) < 10 {
			continue
		}
		local, ok := parseHexAddr(fields[1])
		if !ok || local.Port() != src.Port() {
			continue
		}
		ino, err := strconv.ParseUint(string(fields[9]), 10, 64)
		if err != nil || ino == 0 {
			continue
		}
		u, _ := strconv.Atoi(string(fields[7]))
		if m.offer(local, sock{ino, u}) {
			break
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, fmt.Errorf("process: reading %s: %w", table, err)
	}
	if s, ok := m.best(); ok {
		return s.inode, s.uid, nil
	}
	return 0, 0, ErrNotFound
}

// parseHexAddr parses /proc/net's "0100007F:1F90" (IPv4, the address a
// little-endian word) or its 32-hex-digit IPv6 form (four such words).
func parseHexAddr(b []byte) (netip.AddrPort, bool) {
	host, port, ok := bytes.Cut(b, []byte(":"))
	if !ok {
		return netip.AddrPort{}, false
	}
	p, err := strconv.ParseUint(string(port), 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	raw := make([]byte, hex.DecodedLen(len(host)))
	if _, err := hex.Decode(raw, host); err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	// Each 32-bit word is in host (little-endian) order.
	var out [16]byte
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(out[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	var a netip.Addr
	if len(raw) == 4 {
		a = netip.AddrFrom4([4]byte(out[:4]))
	} else {
		a = netip.AddrFrom16(out)
	}
	return netip.AddrPortFrom(a, uint16(p)), true
}

// walk maps the socket inodes of uid's processes (every process for uid
// -1) to them.
func (l *linuxFinder) walk(uid int) map[uint64]Info {
	out := map[uint64]Info{}
	entries, err := os.ReadDir(l.proc)
	if err != nil {
		return out
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		dir := l.proc + "/" + e.Name()
		if uid >= 0 {
			if fi, err := os.Stat(dir); err != nil || ownerOf(fi) != uid {
				continue
			}
		}
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue // gone, or not ours to read
		}
		var info *Info
		for _, fd := range fds {
			target, err := os.Readlink(dir + "/fd/" + fd.Name())
			if err != nil || !strings.HasPrefix(target, "socket:[") {
				continue
			}
			ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]"), 10, 64)
			if err != nil {
				continue
			}
			if info == nil {
				exe, err := os.Readlink(dir + "/exe")
				if err != nil {
					break // a kernel thread, or gone
				}
				info = &Info{PID: pid, UID: uid, Path: strings.TrimSuffix(exe, " (deleted)")}
			}
			out[ino] = *info
		}
	}
	return out
}
