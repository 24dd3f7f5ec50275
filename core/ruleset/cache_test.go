package ruleset

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestCacheUpdateKeepsTheOldListOnFailure(t *testing.T) {
	var mode atomic.Value
	mode.Store("good")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch mode.Load() {
		case "good":
			fmt.Fprint(w, "payload:\n  - '+.cn'\n")
		case "error":
			http.Error(w, "down", http.StatusBadGateway)
		case "malformed":
			fmt.Fprint(w, "payload:\n  - [unclosed\n")
		case "truncated":
			// Promise more than is sent, then hang up.
			hj := w.(http.Hijacker)
			c, buf, _ := hj.Hijack()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\npayload:\n  - '+.baidu.com'\n")
			buf.Flush()
			c.Close()
		case "huge":
			w.Header().Set("Content-Length", fmt.Sprint(200<<20))
			w.WriteHeader(http.StatusOK)
			chunk := strings.Repeat("a.example\n", 10_000)
			for i := 0; i < 100; i++ {
				if _, err := fmt.Fprint(w, chunk); err != nil {
					return
				}
			}
		case "huge-chunked":
			bw := bufio.NewWriter(w)
			chunk := strings.Repeat("a.example\n", 10_000)
			for i := 0; i < (MaxSize/len(chunk))+10; i++ {
				if _, err := bw.WriteString(chunk); err != nil {
					return
				}
			}
			bw.Flush()
		}
	}))
	defer srv.Close()

	c := &Cache{Dir: t.TempDir(), Fetch: HTTPFetch(srv.Client())}
	src := Source{Name: "cn", URL: srv.URL + "/cn.yaml", Format: FormatClashDomain}
	ctx := context.Background()
	s, err := c.Update(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Match(nameFlow("www.gov.cn", 443)) {
		t.Fatal("the downloaded list does not match")
	}
	before, err := os.ReadFile(c.path(&src))
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(c.path(&src))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("cache file mode %v", fi.Mode())
	}

	for _, m := range []string{"error", "malformed", "truncated", "huge", "huge-chunked"} {
		mode.Store(m)
		if _, err := c.Update(ctx, src); err == nil {
			t.Errorf("%s: Update succeeded", m)
		} else {
			t.Logf("%s: %v", m, err)
		}
		after, _ := os.ReadFile(c.path(&src))
		if string(after) != string(before) {
			t.Errorf("%s: the cached list changed to %.40q", m, after)
		}
		// Get, due for a refresh, falls back to the cache with the error.
		s, err := c.Get(ctx, src, time.Now().Add(48*time.Hour))
		if err == nil || s == nil || !s.Match(nameFlow("www.gov.cn", 443)) {
			t.Errorf("%s: Get = %v, %v; want the cached list and the error", m, s, err)
		}
	}
	// Fresh enough: no download at all.
	mode.Store("error")
	if _, err := c.Get(ctx, src, time.Now()); err != nil {
		t.Errorf("a fresh cache still downloaded: %v", err)
	}
	// Nothing cached and the download fails: an error naming the set.
	other := Source{Name: "other", URL: srv.URL + "/other", Format: FormatClashDomain}
	if _, err := c.Get(ctx, other, time.Now()); err == nil || !strings.Contains(err.Error(), "ruleset other") {
		t.Errorf("Get without a cache: %v", err)
	}
}

func TestFirstOf(t *testing.T) {
	fail := func(context.Context, string) ([]byte, error) {
		return nil, &net.OpError{Op: "dial", Err: fmt.Errorf("refused")}
	}
	ok := func(context.Context, string) ([]byte, error) { return []byte("x"), nil }
	if b, err := FirstOf(fail, ok)(context.Background(), "u"); err != nil || string(b) != "x" {
		t.Errorf("FirstOf(fail, ok) = %q, %v", b, err)
	}
	if _, err := FirstOf(fail, fail)(context.Background(), "u"); err == nil || strings.Count(err.Error(), "refused") != 2 {
		t.Errorf("FirstOf(fail, fail) error = %v, want both", err)
	}
}

func TestParseFormat(t *testing.T) {
	if _, err := Parse("geosite", nil); err == nil || !strings.Contains(err.Error(), "geosite") {
		t.Errorf("unknown format: %v", err)
	}
}
