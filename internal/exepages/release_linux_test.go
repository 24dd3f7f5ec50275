package exepages

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// smapsEntry is one mapping of a made-up /proc/PID/smaps.
func smapsEntry(header string, rssKB, anonKB int) string {
	return header + "\n" +
		"Size:               1024 kB\n" +
		"Rss:                " + itoa(rssKB) + " kB\n" +
		"Pss:                " + itoa(rssKB) + " kB\n" +
		"Anonymous:          " + itoa(anonKB) + " kB\n" +
		"VmFlags: rd mr mw me\n"
}

func itoa(n int) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		if n /= 10; n == 0 {
			return string(b)
		}
	}
}

// TestClean checks which mappings Release unmaps: only the executable's
// private read-only ones whose every page is still the file's.
func TestClean(t *testing.T) {
	smaps := smapsEntry("00400000-00db9000 r-xp 00000000 fe:00 1234                 /usr/bin/skiff", 8000, 0) +
		smapsEntry("00db9000-018d6000 r--p 009b9000 fe:00 1234                 /usr/bin/skiff", 6000, 0) +
		// A PIE's relocated read-only table: its pages are the process's own.
		smapsEntry("018d6000-018e0000 r--p 014d6000 fe:00 1234                 /usr/bin/skiff", 40, 40) +
		smapsEntry("018e0000-0198f000 rw-p 014e0000 fe:00 1234                 /usr/bin/skiff", 400, 100) +
		smapsEntry("0198f000-039db000 rw-p 00000000 00:00 0 ", 120, 120) +
		// Another file, and the same inode on another device.
		smapsEntry("7f0000000000-7f0000100000 r--p 00000000 fe:00 99                   /usr/lib/locale/x", 64, 0) +
		smapsEntry("7f0000100000-7f0000200000 r-xp 00000000 fe:01 1234                 /mnt/other", 64, 0) +
		// Mapped but nothing resident: nothing to do.
		smapsEntry("7f0000200000-7f0000300000 r--p 00000000 fe:00 1234                 /usr/bin/skiff", 0, 0) +
		// Shared, and executable-and-writable: never.
		smapsEntry("7f0000300000-7f0000400000 r--s 00000000 fe:00 1234                 /usr/bin/skiff", 64, 0) +
		smapsEntry("7f0000400000-7f0000500000 rwxp 00000000 fe:00 1234                 /usr/bin/skiff", 64, 0)
	maps, err := parseSmaps(strings.NewReader(smaps))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 10 {
		t.Fatalf("parsed %d mappings, want 10", len(maps))
	}
	var got []uint64
	for _, m := range clean(maps, 0x00500000) {
		got = append(got, m.lo)
	}
	if want := []uint64{0x00400000, 0x00db9000}; !slices.Equal(got, want) {
		t.Errorf("clean mappings start at %x, want %x", got, want)
	}
	if got := clean(maps, 0x1000); got != nil {
		t.Errorf("with the code address in no mapping: %v, want none", got)
	}
	// An entry without its Anonymous line is not known to be clean.
	noAnon := "00400000-00db9000 r-xp 00000000 fe:00 1234 /usr/bin/skiff\nRss: 8000 kB\n"
	maps, err = parseSmaps(strings.NewReader(noAnon))
	if err != nil {
		t.Fatal(err)
	}
	if got := clean(maps, 0x00500000); got != nil {
		t.Errorf("without an Anonymous line: %v, want none", got)
	}
}

// TestParseSmapsRefuses checks that a line that is not smaps is an error,
// not a guess.
func TestParseSmapsRefuses(t *testing.T) {
	for _, in := range []string{
		"Rss: 4 kB\n",
		"00400000-00db9000 r-xp 00000000 fe:00\n",
		"00400000 r-xp 00000000 fe:00 1 /x\n",
		"00db9000-00400000 r-xp 00000000 fe:00 1 /x\n",
		"00400001-00db9000 r-xp 00000000 fe:00 1 /x\n",
		"0040000g-00db9000 r-xp 00000000 fe:00 1 /x\n",
		"00400000-00db9000 r-xp 00000000 fe:00 x /x\n",
		"00400000-00db9000 r-xp 00000000 fe:00 1 /x\nRss: 4\n",
		"00400000-00db9000 r-xp 00000000 fe:00 1 /x\nAnonymous: -4 kB\n",
		"00400000-00db9000 r-xp 00000000 fe:00 1 /x\nRss: 4 MB\n",
	} {
		if _, err := parseSmaps(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}

func FuzzParseSmaps(f *testing.F) {
	f.Add(smapsEntry("00400000-00db9000 r-xp 00000000 fe:00 1234 /usr/bin/skiff", 8000, 0))
	f.Add(smapsEntry("0198f000-039db000 rw-p 00000000 00:00 0 ", 120, 120))
	if b, err := os.ReadFile("/proc/self/smaps"); err == nil {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, in string) {
		maps, err := parseSmaps(strings.NewReader(in))
		if err != nil {
			return
		}
		for _, m := range maps {
			if m.hi <= m.lo || m.rss < 0 || m.anon < 0 {
				t.Fatalf("parsed %+v", m)
			}
		}
		for _, m := range clean(maps, 0x00500000) {
			if m.perms[1] == 'w' || m.anon != 0 || !m.hasAnonTag {
				t.Fatalf("clean() chose %+v", m)
			}
		}
	})
}

// kept is written at run time, so it lives in a writable mapping that
// Release must leave alone.
var kept = map[string]int{}

// TestRelease releases this test binary's pages for real: the clean
// mappings' resident pages go, and the program runs on from the file.
func TestRelease(t *testing.T) {
	kept["x"] = 42
	before := exeMappings(t)
	n, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	after := exeMappings(t)
	var was, now int64
	for _, m := range clean(before, pc()) {
		was += m.rss
	}
	for _, m := range clean(after, pc()) {
		now += m.rss
	}
	if was == 0 || n < was/2 {
		t.Errorf("released %d bytes; the clean mappings held %d before", n, was)
	}
	// What runs between the two reads comes back; most of what the test
	// binary's start touched does not.
	if now >= was {
		t.Errorf("clean mappings hold %d bytes after the release, %d before", now, was)
	}
	if kept["x"] != 42 || strings.Repeat("ab", 2) != "abab" {
		t.Error("the program's data changed")
	}
}

func exeMappings(t *testing.T) []mapping {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	maps, err := parseSmaps(f)
	if err != nil {
		t.Fatal(err)
	}
	return maps
}
