package process

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
)

func TestParseHexAddr(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"0100007F:1F90", "127.0.0.1:8080"},
		{"00000000:0035", "0.0.0.0:53"},
		{"00000000000000000000000001000000:01BB", "[::1]:443"},
		{"B80D0120000000000000000001000000:0050", "[2001:db8::1]:80"},
		{"0000000000000000FFFF00000100007F:0016", "[::ffff:127.0.0.1]:22"},
	} {
		got, ok := parseHexAddr([]byte(tc.in))
		if !ok || got != netip.MustParseAddrPort(tc.want) {
			t.Errorf("parseHexAddr(%s) = %v, %v; want %s", tc.in, got, ok, tc.want)
		}
	}
	for _, bad := range []string{"", "0100007F", "0100007F:", "zz00007F:0050", "01007F:0050", "0100007F:10000"} {
		if _, ok := parseHexAddr([]byte(bad)); ok {
			t.Errorf("parseHexAddr(%q) accepted", bad)
		}
	}
}

// TestRecentProgramExecd: a socket of a PID found before is credited to the
// program that PID runs now, not to the one it ran then (a fake /proc).
func TestRecentProgramExecd(t *testing.T) {
	proc := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	const row = "  %d: 0100007F:%04X 0200007F:0050 02 00000000:00000000 00:00000000 00000000     %d        0 %d 1 0000000000000000 100 0 0 10 0\n"
	table := func(rows ...[2]int) { // port, inode
		b := "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
		for i, r := range rows {
			b += fmt.Sprintf(row, i, r[0], os.Getuid(), r[1])
		}
		must(os.WriteFile(filepath.Join(proc, "net", "tcp"), []byte(b), 0o644))
	}
	must(os.MkdirAll(filepath.Join(proc, "net"), 0o755))
	must(os.MkdirAll(filepath.Join(proc, "4242", "fd"), 0o755))
	must(os.Symlink("/usr/bin/first", filepath.Join(proc, "4242", "exe")))
	must(os.Symlink("socket:[1001]", filepath.Join(proc, "4242", "fd", "3")))
	table([2]int{40001, 1001})
	l := &linuxFinder{proc: proc, owner: map[uint64]Info{}}
	src := netip.MustParseAddrPort("127.0.0.1:40001")
	if info, err := l.find("tcp", src); err != nil || info.Path != "/usr/bin/first" {
		t.Fatalf("first socket: %+v, %v; want /usr/bin/first", info, err)
	}
	// The process exec'd another program, which opened a new socket.
	must(os.Remove(filepath.Join(proc, "4242", "exe")))
	must(os.Symlink("/usr/bin/second (deleted)", filepath.Join(proc, "4242", "exe")))
	must(os.Symlink("socket:[1002]", filepath.Join(proc, "4242", "fd", "4")))
	table([2]int{40001, 1001}, [2]int{40002, 1002})
	src2 := netip.MustParseAddrPort("127.0.0.1:40002")
	if info, err := l.find("tcp", src2); err != nil || info.Path != "/usr/bin/second" || info.PID != 4242 {
		t.Fatalf("second socket: %+v, %v; want PID 4242 /usr/bin/second", info, err)
	}
}
