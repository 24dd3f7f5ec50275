package exepages

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"

	"golang.org/x/sys/unix"
)

// Release unmaps the pages of the executable's read-only mappings (code,
// read-only data, the runtime's tables) from the process and returns how
// many bytes were mapped there before. It never touches a writable mapping
// or one that holds a page of its own (a relocated PIE table, a debugger's
// breakpoint): only pages that are exact copies of the file go.
func Release() (int64, error) {
	// Read as a stream: the whole file (100 KiB and more) would stay in
	// the heap that was just handed back.
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return 0, fmt.Errorf("exepages: %w", err)
	}
	maps, err := parseSmaps(f)
	f.Close()
	if err != nil {
		return 0, fmt.Errorf("exepages: /proc/self/smaps: %w", err)
	}
	var n int64
	for _, m := range clean(maps, pc()) {
		// The raw call: the range is this process's own code, never
		// read or written through a Go value.
		if _, _, e := unix.Syscall(unix.SYS_MADVISE, uintptr(m.lo), uintptr(m.hi-m.lo), unix.MADV_DONTNEED); e != 0 {
			return n, fmt.Errorf("exepages: madvise %x-%x: %w", m.lo, m.hi, e)
		}
		n += m.rss
	}
	return n, nil
}

// pc is an address in the executable's code.
func pc() uint64 { return uint64(reflect.ValueOf(Release).Pointer()) }

// mapping is one entry of /proc/PID/smaps.
type mapping struct {
	lo, hi     uint64
	perms      string // such as r-xp
	dev        string // major:minor
	inode      uint64
	rss, anon  int64 // bytes
	hasAnonTag bool  // the entry said how many of its pages are anonymous
}

// clean returns the mappings of the file that holds pc (the executable)
// whose pages are all clean copies of that file: private, not writable,
// no anonymous page.
func clean(maps []mapping, pc uint64) []mapping {
	var exe *mapping
	for i := range maps {
		if m := &maps[i]; m.lo <= pc && pc < m.hi && m.inode != 0 {
			exe = m
			break
		}
	}
	if exe == nil {
		return nil
	}
	var out []mapping
	for _, m := range maps {
		if m.dev != exe.dev || m.inode != exe.inode || len(m.perms) != 4 {
			continue
		}
		if m.perms[0] != 'r' || m.perms[1] != '-' || m.perms[3] != 'p' {
			continue
		}
		if !m.hasAnonTag || m.anon != 0 || m.rss == 0 {
			continue
		}
		out = append(out, m)
	}
	return out
}

// parseSmaps reads the format of proc(5)'s /proc/PID/smaps: a header line
// per mapping ("lo-hi perms offset dev inode [path]") followed by
// "Name: value [kB]" lines.
func parseSmaps(r io.Reader) ([]mapping, error) {
	var maps []mapping
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		f := bytes.Fields(line)
		if len(f) == 0 {
			continue
		}
		if key, ok := bytes.CutSuffix(f[0], []byte(":")); ok {
			if len(maps) == 0 {
				return nil, fmt.Errorf("%q before the first mapping", key)
			}
			m := &maps[len(maps)-1]
			switch string(key) {
			case "Rss", "Anonymous":
				if len(f) != 3 || string(f[2]) != "kB" {
					return nil, fmt.Errorf("bad line %q", line)
				}
				kb, err := strconv.ParseInt(string(f[1]), 10, 64)
				if err != nil || kb < 0 || kb > 1<<40 {
					return nil, fmt.Errorf("bad line %q", line)
				}
				if key[0] == 'R' {
					m.rss = kb << 10
				} else {
					m.anon, m.hasAnonTag = kb<<10, true
				}
			}
			continue
		}
		m, err := parseHeader(f)
		if err != nil {
			return nil, fmt.Errorf("bad line %q: %w", line, err)
		}
		maps = append(maps, m)
	}
	return maps, sc.Err()
}

// parseHeader parses the fields of a mapping's first line.
func parseHeader(f [][]byte) (mapping, error) {
	var m mapping
	if len(f) < 5 {
		return m, fmt.Errorf("%d fields", len(f))
	}
	lo, hi, ok := bytes.Cut(f[0], []byte("-"))
	if !ok {
		return m, fmt.Errorf("no range")
	}
	var err error
	if m.lo, err = strconv.ParseUint(string(lo), 16, 64); err != nil {
		return m, err
	}
	if m.hi, err = strconv.ParseUint(string(hi), 16, 64); err != nil {
		return m, err
	}
	if m.hi <= m.lo || m.lo%4096 != 0 || m.hi%4096 != 0 {
		return m, fmt.Errorf("range %x-%x", m.lo, m.hi)
	}
	if m.inode, err = strconv.ParseUint(string(f[4]), 10, 64); err != nil {
		return m, err
	}
	m.perms, m.dev = string(f[1]), string(f[3])
	return m, nil
}
