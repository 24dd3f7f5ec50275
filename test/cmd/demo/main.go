// Command demo is `make run` until the desktop app lands: it starts a
// sing-box Hysteria2 server on loopback with a fresh certificate, then runs
// `skiff run` against it in the foreground, so that the local proxy can be
// tried at once. Ctrl-C stops both.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:1080", "address of skiff's local SOCKS5/HTTP proxy")
	flag.Parse()
	if err := run(*listen); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(listen string) error {
	skiffBin, err := harness.SkiffBinary()
	if err != nil {
		return err
	}
	sbBin, err := harness.SingBoxBinary()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "skiff-demo-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cert, err := harness.NewCert(dir)
	if err != nil {
		return err
	}
	port, err := harness.FreePort()
	if err != nil {
		return err
	}
	s := &harness.Server{Kind: harness.Hysteria2, Port: port, Cert: cert, Password: "demo-password"}
	cfg, err := s.ServerConfig()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	server, err := harness.StartSingBox(ctx, sbBin, dir, "demo-server", cfg)
	cancel()
	if err != nil {
		return err
	}
	defer server.Stop()

	fmt.Printf(`
Demo: a sing-box %s Hysteria2 server listens on 127.0.0.1:%d (UDP) with a
throw-away certificate, and skiff connects to it. Try the proxy from another
terminal:

    curl -x socks5h://%s http://example.com/     (SOCKS5)
    curl -x http://%s http://example.com/        (HTTP)

(this machine may have no route to the internet: any loopback service works,
e.g. python3 -m http.server 8000, then curl -x socks5h://%s http://127.0.0.1:8000/)

Press Ctrl-C to stop.

`, harness.SingBoxVersion, port, listen, listen, listen)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	cmd := exec.Command(skiffBin, harness.SkiffRunArgs(listen, []string{s.Link(s.Trusting())})...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return fmt.Errorf("skiff run exited: %v", err)
	case <-sig:
		cmd.Process.Signal(syscall.SIGTERM)
		<-done
		return nil
	}
}
