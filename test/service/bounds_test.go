package service

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// vmHWM reads a process's peak resident set from /proc (kB).
func vmHWM(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(rest), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no VmHWM")
	return 0
}

// floodBody is a profile document of n bytes that costs the decoder as
// much as such a body can: one rule with as many short domains as fit.
func floodBody(n int) []byte {
	var b bytes.Buffer
	b.Grow(n)
	b.WriteString(`{"profile":{"version":1,"routes":{"rules":[{"type":"domain","target":"direct","values":[`)
	for i := 0; b.Len() < n-64; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"d%07d.example"`, i)
	}
	b.WriteString(`]}]}}}`)
	return b.Bytes()
}

// TestServiceBounds runs the resource attacks of issue 28 against the
// real service: 8 concurrent 32 MiB profile bodies (the service stays
// under 400 MiB and up; it took 0.9 GB), a trickled body (closed within
// the body timeout, not held), and 64 unread watch streams by one user
// (root here), which must leave a member's `skiff watch` its stream.
func TestServiceBounds(t *testing.T) {
	l := newLab(t)
	svc := l.startService(t)
	pid := svc.Pid()
	before := vmHWM(t, pid)

	t.Run("profile flood", func(t *testing.T) {
		body := floodBody(32<<20 - 1024)
		var wg sync.WaitGroup
		codes := make([]int, 8)
		for i := range codes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				req, _ := http.NewRequest(http.MethodPut, "http://skiff/v1/profile", bytes.NewReader(body))
				resp, err := l.client().Do(req)
				if err != nil {
					t.Errorf("PUT %d: %v", i, err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				codes[i] = resp.StatusCode
			}()
		}
		wg.Wait()
		peak := vmHWM(t, pid)
		t.Logf("skiff service VmHWM: %d kB before, %d kB after 8 concurrent %d-byte PUT /v1/profile (answers %v)", before, peak, len(body), codes)
		if peak > 400<<10 {
			t.Errorf("the service peaked at %d MiB, want under 400", peak>>10)
		}
		if st := l.status(t); st.State == "" {
			t.Errorf("the service does not answer after the flood: %+v", st)
		}
	})

	// A body, or the headers, sent a byte at a time: the connection is
	// closed within its 10 s timeout.
	for _, tc := range []struct{ name, head string }{
		{"trickled body", "PUT /v1/profile HTTP/1.1\r\nHost: skiff\r\nContent-Length: 100000\r\n\r\n{"},
		{"trickled headers", "GET /v1/status HTTP/1.1\r\nHost: skiff\r\nX-Slow: "},
	} {
		t.Run(tc.name, func(t *testing.T) { trickle(t, l.socket, tc.head) })
	}

	t.Run("unread watches", func(t *testing.T) {
		held := 0
		for range 64 {
			c, err := net.Dial("unix", l.socket)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			fmt.Fprintf(c, "GET /v1/watch?stats=1 HTTP/1.1\r\nHost: skiff\r\n\r\n")
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if line, _ := bufio.NewReader(c).ReadString('\n'); strings.Contains(line, " 200 ") {
				held++
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, "setpriv", "--reuid", l.member, "--regid", l.gidOf(l.member), "--init-groups",
			"timeout", "3", l.skiff, "watch", "--socket", l.socket)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LANG=C.UTF-8"}
		out, err := cmd.CombinedOutput()
		t.Logf("root holds %d unread streams; the member's skiff watch: %v\n%s", held, err, out)
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 124 || strings.Contains(string(out), "too many") {
			t.Errorf("the member's watch did not stream while another user held 64: %v\n%s", err, out)
		}
	})
}

// trickle sends head on a new connection to sock and then a byte every
// 200 ms, and checks that the service closes the connection within 15 s.
func trickle(t *testing.T, sock, head string) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, head)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for time.Since(start) < 30*time.Second {
			if _, err := c.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	io.Copy(io.Discard, c)
	took := time.Since(start)
	c.Close()
	<-done
	t.Logf("connection closed after %v", took.Round(time.Millisecond))
	if took > 15*time.Second {
		t.Errorf("a trickled request held its connection %v", took)
	}
}
