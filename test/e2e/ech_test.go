package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/transport/tlsconf"
	"github.com/skiffvpn/skiff/test/harness"
)

// echPublicName is the ECH configs' public name: what an observer may see.
// The real name, the servers' certificate name and the links' sni, is
// localhost.
const echPublicName = "public.example"

// echKeys is an ECH key pair: the config list clients get and the
// server's keys, in the server's form (sing-box: the PEM lines; Xray:
// base64).
type echKeys struct {
	config []byte
	server []string
}

// singBoxECHKeys runs `sing-box generate ech-keypair`.
func singBoxECHKeys(t *testing.T) echKeys {
	t.Helper()
	out, err := exec.Command(harness.NeedSingBox(t), "generate", "ech-keypair", echPublicName).Output()
	if err != nil {
		t.Fatal(err)
	}
	cfg, rest := pem.Decode(out)
	keys, _ := pem.Decode(rest)
	if cfg == nil || keys == nil || cfg.Type != "ECH CONFIGS" || keys.Type != "ECH KEYS" {
		t.Fatalf("sing-box generate ech-keypair: %q", out)
	}
	return echKeys{config: cfg.Bytes, server: strings.Split(strings.TrimSpace(string(pem.EncodeToMemory(keys))), "\n")}
}

// xrayECHKeys runs `xray tls ech`.
func xrayECHKeys(t *testing.T) echKeys {
	t.Helper()
	out, err := exec.Command(harness.NeedXray(t), "tls", "ech", "--serverName", echPublicName).Output()
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasSuffix(l, ":") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 {
		t.Fatalf("xray tls ech: %q", out)
	}
	cfg, err := base64.StdEncoding.DecodeString(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	return echKeys{config: cfg, server: []string{lines[1]}}
}

// helloRecorder relays TCP to upstream and keeps the first bytes each
// client sent (its ClientHello and more).
type helloRecorder struct {
	srv   *harness.TCPServer
	mu    sync.Mutex
	heads [][]byte
}

func newHelloRecorder(t *testing.T, upstream string) *helloRecorder {
	t.Helper()
	r := &helloRecorder{}
	srv, err := harness.ServeTCP(func(c net.Conn) {
		up, err := net.Dial("tcp", upstream)
		if err != nil {
			return
		}
		defer up.Close()
		var head bytes.Buffer
		tee := io.TeeReader(io.LimitReader(c, 8<<10), &head)
		done := make(chan struct{})
		go func() {
			io.Copy(c, up)
			c.Close()
			close(done)
		}()
		io.Copy(up, tee)
		r.mu.Lock()
		r.heads = append(r.heads, head.Bytes())
		r.mu.Unlock()
		io.Copy(up, c)
		up.Close()
		<-done
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	r.srv = srv
	return r
}

func (r *helloRecorder) port() int {
	_, p, _ := net.SplitHostPort(r.srv.Addr())
	n, _ := strconv.Atoi(p)
	return n
}

// sni returns the server_name of the ClientHello at the start of b, "" for
// none, or an error for a malformed hello.
func sni(b []byte) (string, error) {
	bad := errors.New("malformed ClientHello")
	if len(b) < 9+34 || b[0] != 22 || b[5] != 1 {
		return "", bad
	}
	b = b[9+34:]
	skip := func(lenBytes int) bool {
		if len(b) < lenBytes {
			return false
		}
		n := int(b[0])
		if lenBytes == 2 {
			n = int(binary.BigEndian.Uint16(b))
		}
		if len(b) < lenBytes+n {
			return false
		}
		b = b[lenBytes+n:]
		return true
	}
	if !skip(1) || !skip(2) || !skip(1) || len(b) < 2 {
		return "", bad
	}
	exts := b[2:min(len(b), 2+int(binary.BigEndian.Uint16(b)))]
	for len(exts) >= 4 {
		typ, n := binary.BigEndian.Uint16(exts), int(binary.BigEndian.Uint16(exts[2:]))
		if len(exts) < 4+n {
			return "", bad
		}
		data := exts[4 : 4+n]
		exts = exts[4+n:]
		if typ == 0 && len(data) >= 5 {
			l := int(binary.BigEndian.Uint16(data[3:]))
			if len(data) < 5+l {
				return "", bad
			}
			return string(data[5 : 5+l]), nil
		}
	}
	return "", nil
}

// withECH adds ech= to a share link.
func withECH(l string, config []byte) string {
	body, frag, _ := strings.Cut(l, "#")
	return body + "&ech=" + url.QueryEscape(base64.StdEncoding.EncodeToString(config)) + "#" + frag
}

// TestECH runs VLESS over TLS with ECH against sing-box (tls.ech with a
// `sing-box generate ech-keypair` key) and Xray (echServerKeys from `xray
// tls ech`), through a recorder that sees what the network sees: every
// ClientHello names only the public name, and the real one (localhost)
// is nowhere in the bytes; 16 MiB echo both ways, UDP, a server
// restart; and against the same server without the key, the connection
// is refused rather than made in clear.
func TestECH(t *testing.T) {
	for _, impl := range []serverImpl{singBox, xray} {
		for _, fp := range []string{"", "chrome"} {
			t.Run(string(impl)+"/fp="+fp, func(t *testing.T) { testECH(t, impl, fp) })
		}
	}
}

func testECH(t *testing.T, impl serverImpl, fp string) {
	s := newServer(t, setup{kind: harness.VLESSTCP})
	s.Fingerprint = fp
	var keys echKeys
	var cfg []byte
	if impl == singBox {
		keys = singBoxECHKeys(t)
		cfg = withInbound(t, s, func(in map[string]any) {
			in["tls"].(map[string]any)["ech"] = map[string]any{"enabled": true, "key": keys.server}
		})
	} else {
		keys = xrayECHKeys(t)
		cfg = xrayWithECH(t, s, keys.server[0])
	}
	start := func() *harness.Process {
		if impl == singBox {
			return startConfig(t, s, cfg)
		}
		p := harness.Xray(t, "xray-server", cfg)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := harness.WaitTCP(ctx, s.Addr()); err != nil {
			t.Fatal(err)
		}
		return p
	}
	server := start()
	rec := newHelloRecorder(t, s.Addr())
	front := *s
	front.Port = rec.port()
	l := withECH(front.Link(front.Trusting()), keys.config)
	ob := linkOutbound(t, l, nil)
	echo := harness.TCPEcho(t)
	t.Run("tcp-echo-16MiB", func(t *testing.T) { echoThrough(t, ob, echo, 16<<20) })
	// Xray's VLESS UDP drops datagrams of several KiB: sizes both carry.
	t.Run("udp", func(t *testing.T) { udpThrough(t, ob, 1, 512, 1400, 3000) })
	t.Run("server-restart", func(t *testing.T) {
		server.Stop()
		server = start()
		echoAfterRestart(t, ob, echo)
	})
	t.Run("wire", func(t *testing.T) {
		rec.mu.Lock()
		heads := rec.heads
		rec.mu.Unlock()
		if len(heads) == 0 {
			t.Fatal("no connection recorded")
		}
		for i, h := range heads {
			name, err := sni(h)
			if err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
			if name != echPublicName {
				t.Errorf("connection %d: SNI %q, want the public name %q", i, name, echPublicName)
			}
			if bytes.Contains(h, []byte("localhost")) {
				t.Errorf("connection %d: the real name is in the bytes sent", i)
			}
		}
		t.Logf("%d connections, each naming only %s", len(heads), echPublicName)
	})
	// The same link against the server without ECH: refused, not clear.
	t.Run("rejected", func(t *testing.T) {
		server.Stop()
		if impl == singBox {
			startServer(t, s)
		} else {
			startImpl(t, xray, s)
		}
		ob := linkOutbound(t, l, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		dst, _ := flow.ParseAddr(echo)
		c, err := ob.DialContext(ctx, "tcp", dst)
		if err == nil {
			// VLESS sends its request with the first write.
			c.SetDeadline(time.Now().Add(5 * time.Second))
			_, err = c.Write([]byte("x"))
			if err == nil {
				_, err = c.Read(make([]byte, 1))
			}
			c.Close()
		}
		if !errors.Is(err, tlsconf.ErrECHRejected) {
			t.Fatalf("err %v, want ErrECHRejected", err)
		}
	})
}

// xrayWithECH returns s's Xray configuration with echServerKeys.
func xrayWithECH(t *testing.T, s *harness.Server, keys string) []byte {
	t.Helper()
	b, err := s.XrayConfig()
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	in := cfg["inbounds"].([]any)[0].(map[string]any)
	in["streamSettings"].(map[string]any)["tlsSettings"].(map[string]any)["echServerKeys"] = keys
	b, err = json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
