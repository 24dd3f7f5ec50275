package tun_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/netstack"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/tun"
	"golang.org/x/net/dns/dnsmessage"
)

// The test binary runs itself inside the namespaces in one of these roles,
// chosen by the environment variable helperEnv.
const helperEnv = "SKIFF_TUN_HELPER"

// runHelper runs a role and exits; it returns when the binary is a plain
// test run.
func runHelper() {
	role := os.Getenv(helperEnv)
	if role == "" {
		return
	}
	var err error
	switch role {
	case "server":
		err = serve()
	case "tun":
		err = runTunnel()
	case "client":
		err = runClient(strings.Fields(os.Getenv("SKIFF_TUN_ARGS")))
	case "stub":
		err = runStub(os.Getenv("SKIFF_TUN_ARGS"))
	case "whoami":
		err = serveWhoami(strings.Fields(os.Getenv("SKIFF_TUN_ARGS")))
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serve runs the peers in the server namespace: TCP echo, sink and
// source, UDP echo, an HTTP server and a DNS server.
func serve() error {
	tcpEcho, err := net.Listen("tcp", ":7001")
	if err != nil {
		return err
	}
	sink, err := net.Listen("tcp", ":7002")
	if err != nil {
		return err
	}
	// The source reads an 8-byte length and sends that many bytes.
	source, err := net.Listen("tcp", ":7004")
	if err != nil {
		return err
	}
	go acceptLoop(source, func(c net.Conn) {
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		buf := make([]byte, 256<<10)
		for left := int64(binary.BigEndian.Uint64(hdr[:])); left > 0; {
			n, err := c.Write(buf[:min(int64(len(buf)), left)])
			left -= int64(n)
			if err != nil {
				return
			}
		}
	})
	// UDP on each echo address: a wildcard socket would answer from the
	// namespace's primary address instead.
	for _, a := range []string{"198.51.100.3:7003", "[2001:db8:1::3]:7003"} {
		pc, err := listenPacket(a)
		if err != nil {
			return err
		}
		go udpEchoLoop(pc)
	}
	// The directional UDP server (harness.CheckUDPSizes).
	dir, err := listenPacket(echoAddr4 + ":7005")
	if err != nil {
		return err
	}
	go harness.ServeDirectionalUDP(dir)
	go acceptLoop(tcpEcho, func(c net.Conn) { io.Copy(c, c) })
	// The HTTP server on the echo addresses, and the DNS server that
	// names them (testName), on the server namespace's own address.
	for _, a := range []string{"198.51.100.3:80", "[2001:db8:1::3]:80"} {
		ln, err := listenTCP(a)
		if err != nil {
			return err
		}
		go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "%s %s %s\n", httpMarker, r.Host, r.URL.Path)
		}))
	}
	dns, err := listenPacket("203.0.113.2:53")
	if err != nil {
		return err
	}
	go dnsLoop(dns)
	// The sink reads an 8-byte length and that many bytes, then answers
	// with the count it got.
	go acceptLoop(sink, func(c net.Conn) {
		var hdr [8]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			return
		}
		n, _ := io.CopyN(io.Discard, c, int64(binary.BigEndian.Uint64(hdr[:])))
		fmt.Fprintf(c, "%d\n", n)
	})
	fmt.Println("ready")
	// Run until the test closes stdin.
	io.Copy(io.Discard, os.Stdin)
	return nil
}

// The test name the server namespace's DNS server answers, and the first
// word of every HTTP answer.
const (
	testName   = "name.test"
	httpMarker = "skiff-tun-http"
	// serverName is the proxy server's name (srvAddr4).
	serverName = "server.test"
)

// dnsLoop answers DNS queries: testName's A and AAAA records are the echo
// addresses; other names do not exist.
func dnsLoop(pc net.PacketConn) {
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		if resp, err := dnsAnswer(buf[:n]); err == nil {
			pc.WriteTo(resp, from)
		}
	}
}

func dnsAnswer(query []byte) ([]byte, error) {
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return nil, err
	}
	q, err := p.Question()
	if err != nil {
		return nil, err
	}
	known := strings.EqualFold(q.Name.String(), testName+".")
	server := strings.EqualFold(q.Name.String(), serverName+".") // IPv4 only
	rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionDesired: h.RecursionDesired}
	if !known && !server {
		rh.RCode = dnsmessage.RCodeNameError
	}
	b := dnsmessage.NewBuilder(nil, rh)
	if err := b.StartQuestions(); err != nil {
		return nil, err
	}
	if err := b.Question(q); err != nil {
		return nil, err
	}
	if err := b.StartAnswers(); err != nil {
		return nil, err
	}
	rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
	switch {
	case server && q.Type == dnsmessage.TypeA:
		err = b.AResource(rr, dnsmessage.AResource{A: netip.MustParseAddr(srvAddr4).As4()})
	case known && q.Type == dnsmessage.TypeA:
		err = b.AResource(rr, dnsmessage.AResource{A: netip.MustParseAddr("198.51.100.3").As4()})
	case known && q.Type == dnsmessage.TypeAAAA:
		err = b.AAAAResource(rr, dnsmessage.AAAAResource{AAAA: netip.MustParseAddr("2001:db8:1::3").As16()})
	}
	if err != nil {
		return nil, err
	}
	return b.Finish()
}

// runStub is a local stub resolver, as systemd-resolved is on
// 127.0.0.53: it forwards each query from its own (unmarked) socket to
// upstream and relays the answer.
func runStub(upstream string) error {
	pc, err := listenPacket("127.0.0.53:53")
	if err != nil {
		return err
	}
	fmt.Println("stub ready")
	buf := make([]byte, 1500)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		q := append([]byte(nil), buf[:n]...)
		go func() {
			c, err := net.Dial("udp", upstream)
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(3 * time.Second))
			if _, err := c.Write(q); err != nil {
				return
			}
			resp := make([]byte, 1500)
			if n, err := c.Read(resp); err == nil {
				pc.WriteTo(resp[:n], from)
			}
		}()
	}
}

// listenTCP and listenPacket listen on an address of the namespace, which
// the kernel may not have ready yet: a new IPv6 address is briefly
// tentative even on lo.
func listenTCP(addr string) (net.Listener, error) {
	return retryAddr(func() (net.Listener, error) { return net.Listen("tcp", addr) })
}

func listenPacket(addr string) (net.PacketConn, error) {
	return retryAddr(func() (net.PacketConn, error) { return net.ListenPacket("udp", addr) })
}

func retryAddr[T any](listen func() (T, error)) (T, error) {
	deadline := time.Now().Add(3 * time.Second)
	for {
		l, err := listen()
		if err == nil || !errors.Is(err, syscall.EADDRNOTAVAIL) || time.Now().After(deadline) {
			return l, err
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func udpEchoLoop(pc net.PacketConn) {
	buf := make([]byte, 65535)
	for {
		n, addr, err := pc.ReadFrom(buf)
		if err != nil {
			return
		}
		pc.WriteTo(buf[:n], addr)
	}
}

func acceptLoop(ln net.Listener, h func(net.Conn)) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			h(c)
		}()
	}
}

// runTunnel opens the TUN with auto-route and a netstack whose handler dials
// directly, outside the tunnel; it then obeys commands on stdin.
func runTunnel() error {
	cfg := tun.DefaultConfig()
	cfg.StateFile = os.Getenv("SKIFF_TUN_STATE")
	level := slog.LevelInfo
	if os.Getenv("SKIFF_TUN_DEBUG") != "" {
		level = slog.LevelDebug // every route, rule and flow
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	if os.Getenv("SKIFF_TUN_STRICT") == "0" {
		cfg.StrictRoute = false
	}
	t, err := tun.Open(cfg)
	if err != nil {
		return err
	}
	h := &directHandler{d: t.Dialer()}
	st, err := netstack.New(t.Device, h, netstack.Options{UDPTimeout: 10 * time.Second, Logger: cfg.Logger})
	if err != nil {
		t.Close()
		return err
	}
	stopProfile := func() {}
	if p := os.Getenv("SKIFF_TUN_CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err == nil {
			pprof.StartCPUProfile(f)
			stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	fmt.Println("ready", t.Name())
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
loop:
	for {
		select {
		case <-sig:
			break loop
		case l, ok := <-lines:
			if !ok || l == "quit" {
				break loop
			}
			if l == "stats" {
				fmt.Printf("stats %d %d\n", h.tcp.Load(), h.udp.Load())
			}
			if l == "rss" {
				runtime.GC()
				debug.FreeOSMemory()
				rss, hwm := memStatus()
				fmt.Printf("rss %d %d\n", rss, hwm)
			}
		}
	}
	stopProfile()
	errS := st.Close()
	errT := t.Close()
	if err := errors.Join(errS, errT); err != nil {
		return err
	}
	fmt.Println("closed")
	return nil
}

// memStatus returns VmRSS and VmHWM (peak RSS) in KiB.
func memStatus() (rss, hwm int) {
	b, _ := os.ReadFile("/proc/self/status")
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			rss = v
		case "VmHWM:":
			hwm = v
		}
	}
	return rss, hwm
}

// directHandler is the smallest flow.Handler: it connects each flow to its
// destination with the tunnel's bypass dialer and copies both ways.
type directHandler struct {
	d        outbound.Dialer
	tcp, udp atomic.Int64 // flows seen
}

func (h *directHandler) HandleStream(ctx context.Context, m flow.Metadata, accept func() (net.Conn, error)) error {
	h.tcp.Add(1)
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	up, err := h.d.DialContext(dctx, "tcp", m.Destination.String())
	cancel()
	if err != nil {
		return err
	}
	defer up.Close()
	app, err := accept()
	if err != nil {
		return err
	}
	defer app.Close()
	stop := context.AfterFunc(ctx, func() { up.Close(); app.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(up, app)
		if c, ok := up.(*net.TCPConn); ok {
			c.CloseWrite()
		}
	}()
	io.Copy(app, up)
	if c, ok := app.(interface{ CloseWrite() error }); ok {
		c.CloseWrite()
	}
	wg.Wait()
	return nil
}

func (h *directHandler) HandlePacket(ctx context.Context, m flow.Metadata, conn net.PacketConn) error {
	h.udp.Add(1)
	defer conn.Close()
	network := "udp4"
	if m.Destination.IP.Is6() {
		network = "udp6"
	}
	up, err := h.d.ListenPacket(ctx, network, "")
	if err != nil {
		return err
	}
	defer up.Close()
	stop := context.AfterFunc(ctx, func() { up.Close(); conn.Close() })
	defer stop()
	go func() {
		buf := make([]byte, 65535)
		for {
			up.SetReadDeadline(time.Now().Add(30 * time.Second))
			n, from, err := up.ReadFrom(buf)
			if err != nil {
				conn.Close()
				return
			}
			ap := from.(*net.UDPAddr).AddrPort()
			if _, err := conn.WriteTo(buf[:n], flow.AddrFromAddrPort(netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()))); err != nil {
				return
			}
		}
	}()
	buf := make([]byte, 65535)
	for {
		n, to, err := conn.ReadFrom(buf)
		if err != nil {
			return nil
		}
		a, err := flow.AddrFromNet(to)
		if err != nil {
			continue
		}
		if _, err := up.WriteTo(buf[:n], a.UDPAddr()); err != nil {
			return err
		}
	}
}
