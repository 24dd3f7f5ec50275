// Command hysteria is the official Hysteria 2 server (and, for reference
// checks, its client), built from github.com/apernet/hysteria/core/v2 as a
// test peer. It lives in a module of its own so that the apernet quic-go
// fork it needs stays out of the test module. The e2e harness builds it
// into test/bin (see test/harness/hysteria.go).
//
//	hysteria version
//	hysteria server -listen 127.0.0.1:PORT -cert FILE -key FILE -password PW
//	hysteria udpcheck -server 127.0.0.1:PORT -password PW -echo ADDR -sizes 1400,3000
//
// The server prints "hysteria server listening on ADDR" once its socket is
// open, logs every connection and request to stderr, and stops on SIGTERM.
// udpcheck sends one datagram of each size to a UDP echo server through
// the server with the official client and exits 0 when each came back
// intact.
package main

import (
	"bytes"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apernet/hysteria/core/v2/client"
	"github.com/apernet/hysteria/core/v2/server"
)

// version is what "hysteria version" prints; the harness rebuilds the
// binary when it differs from what it expects.
const version = "hysteria core v2.7.1 peer 1"

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	if len(os.Args) < 2 {
		log.Fatal("usage: hysteria version|server|udpcheck [flags]")
	}
	var err error
	switch os.Args[1] {
	case "version":
		fmt.Println(version)
	case "server":
		err = runServer(os.Args[2:])
	case "udpcheck":
		err = runUDPCheck(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		log.Fatal(err)
	}
}

func runServer(args []string) error {
	fs := flag.NewFlagSet("server", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "UDP address to serve on")
	certFile := fs.String("cert", "", "certificate (PEM)")
	keyFile := fs.String("key", "", "private key (PEM)")
	password := fs.String("password", "", "the password clients authenticate with")
	noUDP := fs.Bool("disable-udp", false, "refuse UDP relaying")
	fs.Parse(args)
	if *password == "" {
		return errors.New("server: -password is required")
	}
	cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	addr, err := net.ResolveUDPAddr("udp", *listen)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	pc, err := net.ListenUDP("udp", addr)
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	s, err := server.NewServer(&server.Config{
		TLSConfig:     server.TLSConfig{Certificates: []tls.Certificate{cert}},
		Conn:          pc,
		DisableUDP:    *noUDP,
		Authenticator: passwordAuth(*password),
		EventLogger:   eventLogger{},
	})
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	log.Printf("hysteria server listening on %s", pc.LocalAddr())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		s.Close()
	}()
	if err := s.Serve(); err != nil && !errors.Is(err, net.ErrClosed) {
		log.Printf("serve: %v", err)
	}
	return nil
}

type passwordAuth string

func (p passwordAuth) Authenticate(addr net.Addr, auth string, tx uint64) (bool, string) {
	return auth == string(p), "user"
}

// eventLogger logs what the server does, for the test logs.
type eventLogger struct{}

func (eventLogger) Connect(addr net.Addr, id string, tx uint64) {
	log.Printf("connect %s id=%s tx=%d", addr, id, tx)
}

func (eventLogger) Disconnect(addr net.Addr, id string, err error) {
	log.Printf("disconnect %s id=%s: %v", addr, id, err)
}

func (eventLogger) TCPRequest(addr net.Addr, id, reqAddr string) {
	log.Printf("tcp %s id=%s -> %s", addr, id, reqAddr)
}

func (eventLogger) TCPError(addr net.Addr, id, reqAddr string, err error) {
	if err != nil {
		log.Printf("tcp %s id=%s -> %s: %v", addr, id, reqAddr, err)
	}
}

func (eventLogger) UDPRequest(addr net.Addr, id string, sessionID uint32, reqAddr string) {
	log.Printf("udp %s id=%s session=%d -> %s", addr, id, sessionID, reqAddr)
}

func (eventLogger) UDPError(addr net.Addr, id string, sessionID uint32, err error) {
	if err != nil {
		log.Printf("udp %s id=%s session=%d: %v", addr, id, sessionID, err)
	}
}

func runUDPCheck(args []string) error {
	fs := flag.NewFlagSet("udpcheck", flag.ExitOnError)
	srv := fs.String("server", "", "the Hysteria 2 server's UDP address")
	password := fs.String("password", "", "password")
	echo := fs.String("echo", "", "UDP echo server to reach through the server")
	sizes := fs.String("sizes", "1400,3000", "datagram sizes, comma-separated")
	fs.Parse(args)
	addr, err := net.ResolveUDPAddr("udp", *srv)
	if err != nil {
		return fmt.Errorf("udpcheck: %w", err)
	}
	c, _, err := client.NewClient(&client.Config{
		ServerAddr: addr,
		Auth:       *password,
		TLSConfig:  client.TLSConfig{ServerName: "localhost", InsecureSkipVerify: true},
	})
	if err != nil {
		return fmt.Errorf("udpcheck: connect: %w", err)
	}
	defer c.Close()
	u, err := c.UDP()
	if err != nil {
		return fmt.Errorf("udpcheck: %w", err)
	}
	defer u.Close()
	got := make(chan []byte, 16)
	go func() {
		for {
			b, _, err := u.Receive()
			if err != nil {
				close(got)
				return
			}
			got <- bytes.Clone(b)
		}
	}()
	failed := 0
	for _, f := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return fmt.Errorf("udpcheck: bad size %q", f)
		}
		msg := make([]byte, n)
		rand.Read(msg)
		ok := false
		for attempt := 0; attempt < 3 && !ok; attempt++ {
			if err := u.Send(msg, *echo); err != nil {
				return fmt.Errorf("udpcheck: send %d bytes: %w", n, err)
			}
			timeout := time.After(2 * time.Second)
		wait:
			for {
				select {
				case b := <-got:
					if bytes.Equal(b, msg) {
						ok = true
						break wait
					}
				case <-timeout:
					break wait
				}
			}
		}
		fmt.Printf("udpcheck %d bytes: ok=%v\n", n, ok)
		if !ok {
			failed++
		}
	}
	if failed > 0 {
		return fmt.Errorf("udpcheck: %d sizes never came back", failed)
	}
	return nil
}
