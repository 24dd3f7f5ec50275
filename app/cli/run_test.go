package cli

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const goodLink = "hysteria2://topsecret@127.0.0.1:9/?sni=example.com#primary"

func TestRunFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no link", []string{"--listen", "127.0.0.1:1080"}, "--link or --node: at least one"},
		{"bad second link", []string{"--link", goodLink, "--link", "hysteria2://topsecret@host:99999"}, "--link #2: link: hysteria2: port"},
		{"not a link", []string{"--link", "topsecret"}, "--link #1: link: not a share link"},
		{"log level", []string{"--link", goodLink, "--log-level", "loud"}, "--log-level"},
		{"pprof off loopback", []string{"--link", goodLink, "--pprof", "0.0.0.0:6060"}, "--pprof"},
		{"unknown flag", []string{"--link", goodLink, "--bogus"}, "bogus"},
		{"stray argument", []string{"--link", goodLink, "extra"}, "unexpected argument"},
	} {
		var stderr bytes.Buffer
		code := runCmd(tc.args, nil, io.Discard, &stderr)
		if code != 2 {
			t.Errorf("%s: exit %d, want 2", tc.name, code)
		}
		if !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%s: stderr %q, want it to mention %q", tc.name, stderr.String(), tc.want)
		}
		if strings.Contains(stderr.String(), "topsecret") {
			t.Errorf("%s: stderr shows the link's secret: %q", tc.name, stderr.String())
		}
	}
}

func TestRunOpenProxyRefused(t *testing.T) {
	var stderr bytes.Buffer
	if code := runCmd([]string{"--link", goodLink, "--listen", "0.0.0.0:0"}, nil, io.Discard, &stderr); code != 1 {
		t.Errorf("exit %d, want 1; stderr %q", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), "not a loopback address") {
		t.Errorf("stderr %q", stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunUntilSignal runs the command, waits for its ready line, checks
// pprof, and stops it with SIGTERM: it must exit 0.
func TestRunUntilSignal(t *testing.T) {
	var stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- runCmd([]string{"--link", goodLink, "--listen", "127.0.0.1:0", "--pprof", "127.0.0.1:0"}, nil, io.Discard, &stderr)
	}()
	pprofRE := regexp.MustCompile(`msg="pprof listening" addr=(\S+)`)
	waitListening(t, &stderr, done)
	out := stderr.String()
	if !strings.Contains(out, "outbound=primary") || strings.Contains(out, "topsecret") {
		t.Errorf("log should name the outbound and no secret:\n%s", out)
	}
	m := pprofRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no pprof line:\n%s", out)
	}
	resp, err := http.Get("http://" + m[1] + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte("goroutine profile")) {
		t.Errorf("pprof: %d %.100q", resp.StatusCode, body)
	}
	self, _ := os.FindProcess(os.Getpid())
	if err := self.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d after SIGTERM, want 0; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("did not stop after SIGTERM")
	}
}

func TestRunFlagsSavedNode(t *testing.T) {
	dir := t.TempDir()
	var out, errb strings.Builder
	link := "hysteria2://secret@127.0.0.1:8443?sni=localhost#saved-one"
	if code := Main([]string{"import", "--config-dir", dir, link}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("import: exit %d: %s", code, errb.String())
	}
	rf, err := parseRunFlags([]string{"--config-dir", dir, "--link", "hysteria2://a@127.0.0.1:9443#first", "--node", "saved-one"}, &errb)
	if err != nil {
		t.Fatal(err)
	}
	if len(rf.nodes) != 2 || rf.nodes[0].Name != "first" || rf.nodes[1].Name != "saved-one" || rf.nodes[1].Port != 8443 {
		t.Fatalf("nodes = %+v", rf.nodes)
	}
	if _, err := parseRunFlags([]string{"--config-dir", dir, "--node", "nope"}, &errb); err == nil {
		t.Error("unknown saved node: want error")
	}
}
