package instance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the program under test: with childEnv set it
// acquires the instance and reports on stdout ("primary", then one line of
// JSON per hand-over; or "handed").
const childEnv = "SKIFF_INSTANCE_TEST_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		os.Exit(child(dir, os.Args[len(os.Args)-1]))
	}
	os.Exit(m.Run())
}

func child(dir, arg string) int {
	p, err := Acquire(context.Background(), Config{Name: "test", Dir: dir}, []string{"--flag", arg})
	if errors.Is(err, ErrRunning) {
		fmt.Println("handed")
		return 0
	}
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	defer p.Close()
	fmt.Println("primary")
	enc := json.NewEncoder(os.Stdout)
	for m := range p.Messages() {
		enc.Encode(m)
		if m.Args[len(m.Args)-1] == "quit" {
			return 0
		}
	}
	return 0
}

// launch starts a copy of the program with arg as its last argument.
func launch(t *testing.T, dir, arg string) (*exec.Cmd, *bufio.Scanner) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$", arg)
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd, bufio.NewScanner(out)
}

func line(t *testing.T, sc *bufio.Scanner) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		if sc.Scan() {
			got <- sc.Text()
		}
		close(got)
	}()
	select {
	case s := <-got:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no line from the child in 10 s")
		return ""
	}
}

func testDir(t *testing.T) string {
	if runtime.GOOS == "windows" {
		return ""
	}
	// Short: a Unix socket's path has at most 104-108 bytes.
	d, err := os.MkdirTemp("", "skinst")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return filepath.Join(d, "run")
}

// TestSecondLaunchHandsOver: a second launch exits with its arguments
// handed to the first, which goes on running and receives them; after the
// first exits, the next launch becomes the primary.
func TestSecondLaunchHandsOver(t *testing.T) {
	dir := testDir(t)
	first, out := launch(t, dir, "first")
	if s := line(t, out); s != "primary" {
		t.Fatalf("first launch: %q, want primary", s)
	}
	link := "clash://install-config?url=https%3A%2F%2Fsub.example.com%2Fs%3Ftoken%3D1"
	second, sout := launch(t, dir, link)
	if s := line(t, sout); s != "handed" {
		t.Fatalf("second launch: %q, want handed", s)
	}
	if err := second.Wait(); err != nil {
		t.Fatalf("second launch did not exit cleanly: %v", err)
	}
	var m Message
	if err := json.Unmarshal([]byte(line(t, out)), &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Args) != 2 || m.Args[0] != "--flag" || m.Args[1] != link {
		t.Fatalf("the first got %q", m.Args)
	}
	if first.ProcessState != nil {
		t.Fatal("the first launch exited")
	}
	// Only the first remains; told to quit, it frees the name.
	quit, qout := launch(t, dir, "quit")
	if s := line(t, qout); s != "handed" {
		t.Fatalf("third launch: %q", s)
	}
	quit.Wait()
	line(t, out)
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	again, aout := launch(t, dir, "again")
	if s := line(t, aout); s != "primary" {
		t.Fatalf("after the first quit: %q, want primary", s)
	}
	again.Process.Kill()
}

// TestCrashedPrimary: a primary killed with SIGKILL leaves its socket
// behind; the next launch becomes the primary anyway.
func TestCrashedPrimary(t *testing.T) {
	dir := testDir(t)
	first, out := launch(t, dir, "first")
	if s := line(t, out); s != "primary" {
		t.Fatal(s)
	}
	first.Process.Kill()
	first.Wait()
	_, nout := launch(t, dir, "next")
	if s := line(t, nout); s != "primary" {
		t.Fatalf("after a crash: %q, want primary", s)
	}
}

// TestLaunchStorm: of launches started together exactly one is the
// primary, and it receives every other's arguments.
func TestLaunchStorm(t *testing.T) {
	dir := testDir(t)
	const n = 6
	type result struct {
		cmd *exec.Cmd
		out *bufio.Scanner
	}
	var rs []result
	for i := range n {
		c, o := launch(t, dir, fmt.Sprint("storm", i))
		rs = append(rs, result{c, o})
	}
	var primary *bufio.Scanner
	handed := 0
	for _, r := range rs {
		switch s := line(t, r.out); s {
		case "primary":
			if primary != nil {
				t.Fatal("two primaries")
			}
			primary = r.out
		case "handed":
			handed++
			if err := r.cmd.Wait(); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("a launch said %q", s)
		}
	}
	if primary == nil || handed != n-1 {
		t.Fatalf("primary %v, %d handed over", primary != nil, handed)
	}
	for range handed {
		var m Message
		if err := json.Unmarshal([]byte(line(t, primary)), &m); err != nil || !strings.HasPrefix(m.Args[len(m.Args)-1], "storm") {
			t.Fatalf("hand-over %+v, %v", m, err)
		}
	}
}

// raw connects to p's socket as a client of its own.
func raw(t *testing.T, cfg Config) net.Conn {
	t.Helper()
	c, err := dial(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(5 * time.Second))
	return c
}

// TestHostileClient: a client that sends an oversized, malformed or
// unbounded message, or nothing at all, is refused without a hand-over,
// and a good launch is still served meanwhile.
func TestHostileClient(t *testing.T) {
	cfg := Config{Name: "hostile", Dir: testDir(t)}
	p, err := Acquire(context.Background(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	frame := func(body string) []byte {
		return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
	}
	many := make([]string, MaxArgs+1)
	for _, tt := range []struct {
		name string
		send []byte
	}{
		{"oversized length", binary.BigEndian.AppendUint32(nil, 1<<30)},
		{"just over the bound", append(binary.BigEndian.AppendUint32(nil, MaxMessage-3), bytes.Repeat([]byte("a"), MaxMessage-3)...)},
		{"zero length", binary.BigEndian.AppendUint32(nil, 0)},
		{"not JSON", frame("rm -rf /")},
		{"unknown field", frame(`{"args":[],"exec":"/bin/sh"}`)},
		{"two values", frame(`{"args":[]}{"args":["x"]}`)},
		{"wrong type", frame(`{"args":"x"}`)},
		{"too many args", frame(string(must(json.Marshal(Message{Args: many}))))},
		{"control character", frame(`{"args":["a\u0000b"]}`)},
		{"long arg", frame(`{"args":["` + strings.Repeat("a", MaxArg+1) + `"]}`)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := raw(t, cfg)
			c.Write(tt.send)
			var r [1]byte
			n, _ := c.Read(r[:])
			if n == 1 && r[0] == replyOK {
				t.Fatal("accepted")
			}
		})
	}
	// A client that says nothing holds a slot until ioTimeout, no longer;
	// four of them do not keep a real launch out for good.
	for range maxConns {
		raw(t, cfg)
	}
	start := time.Now()
	if _, err := Acquire(context.Background(), cfg, []string{"good"}); !errors.Is(err, ErrRunning) {
		t.Fatalf("a good launch beside silent clients: %v", err)
	}
	if d := time.Since(start); d > 2*ioTimeout {
		t.Fatalf("the good launch took %v", d)
	}
	select {
	case m := <-p.Messages():
		if len(m.Args) != 1 || m.Args[0] != "good" {
			t.Fatalf("delivered %q; no hostile message may be", m.Args)
		}
	default:
		t.Fatal("the good launch was not delivered")
	}
	select {
	case m := <-p.Messages():
		t.Fatalf("also delivered %q", m.Args)
	default:
	}
}

// TestPrivateDir: the socket's directory is made 0700, the socket 0600,
// and a directory of another user is refused.
func TestPrivateDir(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the pipe's DACL is the Windows equivalent")
	}
	dir := testDir(t)
	os.MkdirAll(dir, 0o777)
	os.Chmod(dir, 0o777)
	p, err := Acquire(context.Background(), Config{Name: "perm", Dir: dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "perm.sock"): 0o600} {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: %v, want %v", path, st.Mode().Perm(), want)
		}
	}
	if os.Geteuid() != 0 {
		return
	}
	other := testDir(t)
	os.MkdirAll(other, 0o700)
	os.Chown(other, 65534, 65534)
	if _, err := Acquire(context.Background(), Config{Name: "perm", Dir: other}, nil); err == nil || !strings.Contains(err.Error(), "not to this user") {
		t.Fatalf("a directory of uid 65534: %v", err)
	}
}

func TestEncodeBounds(t *testing.T) {
	if _, err := encode(Message{Args: []string{strings.Repeat("a", MaxArg)}}); err != nil {
		t.Fatal(err)
	}
	big := make([]string, MaxArgs)
	for i := range big {
		big[i] = strings.Repeat("a", MaxArg)
	}
	if _, err := encode(Message{Args: big}); err == nil {
		t.Fatal("a message over MaxMessage was encoded")
	}
	if err := (Config{Name: "../x"}).check(); err == nil {
		t.Fatal("a name with a path was accepted")
	}
}

func FuzzReadFrame(f *testing.F) {
	good, _ := encode(Message{Args: []string{"--x", "clash://install-config?url=https://a/"}})
	f.Add(good)
	f.Add([]byte{0, 0, 0, 2, '{', '}'})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := readFrame(bytes.NewReader(b))
		if err != nil {
			return
		}
		if validate(m) != nil {
			t.Fatalf("readFrame returned an invalid message %q", m.Args)
		}
		if _, err := encode(m); err != nil {
			t.Fatalf("a message read does not encode: %v", err)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
