package ssh

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/internal/nettest"
)

// testServer is an x/crypto SSH server on loopback that forwards
// direct-tcpip channels, for the client's behaviour; test/e2e runs
// OpenSSH's sshd.
type testServer struct {
	ln      net.Listener
	hostPub string // authorized_keys line of its host key
	conns   atomic.Int32
	mu      sync.Mutex
	live    []net.Conn
	wg      sync.WaitGroup
}

func newSigner(t *testing.T) (ssh.Signer, ed25519.PrivateKey) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	return s, priv
}

func startServer(t *testing.T, password string, userKey ssh.PublicKey) *testServer {
	t.Helper()
	host, _ := newSigner(t)
	cfg := &ssh.ServerConfig{
		PasswordCallback: func(_ ssh.ConnMetadata, p []byte) (*ssh.Permissions, error) {
			if password != "" && string(p) == password {
				return nil, nil
			}
			return nil, errors.New("wrong password")
		},
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if userKey != nil && string(k.Marshal()) == string(userKey.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
	}
	cfg.AddHostKey(host)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &testServer{ln: ln, hostPub: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(host.PublicKey())))}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.live = append(s.live, c)
			s.mu.Unlock()
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(c, cfg) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.kill(); s.wg.Wait() })
	return s
}

func (s *testServer) serve(c net.Conn, cfg *ssh.ServerConfig) {
	defer c.Close()
	sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	s.conns.Add(1)
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "direct-tcpip" {
			nc.Reject(ssh.UnknownChannelType, "no")
			continue
		}
		d := nc.ExtraData()
		n := binary.BigEndian.Uint32(d)
		host := string(d[4 : 4+n])
		port := binary.BigEndian.Uint32(d[4+n:])
		dst, err := net.Dial("tcp", net.JoinHostPort(host, strconv.Itoa(int(port))))
		if err != nil {
			nc.Reject(ssh.ConnectionFailed, err.Error())
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			dst.Close()
			continue
		}
		go ssh.DiscardRequests(creqs)
		go func() { io.Copy(ch, dst); ch.CloseWrite() }()
		go func() { io.Copy(dst, ch); dst.(*net.TCPConn).CloseWrite() }()
	}
}

// kill cuts every SSH connection, as a server restart does.
func (s *testServer) kill() {
	s.mu.Lock()
	for _, c := range s.live {
		c.Close()
	}
	s.live = nil
	s.mu.Unlock()
}

func (s *testServer) node(o node.SSHOptions) *node.Node {
	a := s.ln.Addr().(*net.TCPAddr)
	if o.HostKeys == nil {
		o.HostKeys = []string{s.hostPub}
	}
	return &node.Node{Name: "t", Protocol: node.SSH, Server: "127.0.0.1", Port: uint16(a.Port), SSH: &o}
}

func echoServer(t *testing.T) flow.Addr {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { io.Copy(c, c); c.Close() }()
		}
	}()
	a := ln.Addr().(*net.TCPAddr)
	return flow.NameAddr("localhost", uint16(a.Port)) // resolved by the server
}

func echo(t *testing.T, c *Client, dst flow.Addr) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := c.DialContext(ctx, "tcp", dst)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	msg := make([]byte, 100<<10)
	rand.Read(msg)
	go conn.Write(msg)
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != string(msg) {
		t.Fatal("echo differs")
	}
}

func TestPasswordAndSharedConnection(t *testing.T) {
	s := startServer(t, "pw", nil)
	c, err := New(s.node(node.SSHOptions{User: "u", Password: "pw"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dst := echoServer(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { echo(t, c, dst) })
	}
	wg.Wait()
	if n := s.conns.Load(); n != 1 {
		t.Fatalf("%d SSH connections for 8 flows, want 1", n)
	}
	// The connection dies (a server restart): the next flow dials again.
	s.kill()
	echo(t, c, dst)
	if n := s.conns.Load(); n != 2 {
		t.Fatalf("%d SSH connections after the first died, want 2", n)
	}
}

func TestPrivateKeyWithPassphrase(t *testing.T) {
	user, priv := newSigner(t)
	s := startServer(t, "", user.PublicKey())
	blk, err := ssh.MarshalPrivateKeyWithPassphrase(priv, "", []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	key := string(pem.EncodeToMemory(blk))
	if _, err := New(s.node(node.SSHOptions{User: "u", PrivateKey: key}), nil); err == nil || !strings.Contains(err.Error(), "no passphrase") {
		t.Fatalf("encrypted key without passphrase: %v", err)
	}
	if _, err := New(s.node(node.SSHOptions{User: "u", PrivateKey: key, PrivateKeyPassphrase: "nope"}), nil); err == nil || !strings.Contains(err.Error(), "wrong passphrase") {
		t.Fatalf("wrong passphrase: %v", err)
	}
	c, err := New(s.node(node.SSHOptions{User: "u", PrivateKey: key, PrivateKeyPassphrase: "secret"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo(t, c, echoServer(t))
}

func TestRefused(t *testing.T) {
	s := startServer(t, "pw", nil)
	other, _ := newSigner(t)
	otherLine := string(ssh.MarshalAuthorizedKey(other.PublicKey()))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	dst := echoServer(t)

	c, err := New(s.node(node.SSHOptions{User: "u", Password: "pw", HostKeys: []string{otherLine}}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DialContext(ctx, "tcp", dst); !errors.Is(err, ErrHostKeyMismatch) {
		t.Fatalf("wrong host key: %v, want ErrHostKeyMismatch", err)
	}
	c.Close()

	c, err = New(s.node(node.SSHOptions{User: "u", Password: "wrong"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DialContext(ctx, "tcp", dst); !errors.Is(err, outbound.ErrAuthRejected) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("wrong password: %v, want ErrAuthRejected without the password", err)
	}
	if _, err := c.ListenPacket(ctx, dst); !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("UDP: %v, want ErrUnsupported", err)
	}
	c.Close()

	// The server cannot connect to a closed port: it is up all the same.
	c, err = New(s.node(node.SSHOptions{User: "u", Password: "pw"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	closed := flow.AddrFromAddrPort(nettest.ClosedPort(t))
	if _, err := c.DialContext(ctx, "tcp", closed); !errors.Is(err, outbound.ErrTargetRefused) {
		t.Fatalf("closed destination: %v, want ErrTargetRefused", err)
	}
	c.Close()

	for _, tc := range []struct {
		name string
		o    node.SSHOptions
		want string
	}{
		{"no pin", node.SSHOptions{User: "u", Password: "pw", HostKeys: []string{}}, "none pinned"},
		{"bad pin", node.SSHOptions{User: "u", Password: "pw", HostKeys: []string{"ssh-ed25519 !!"}}, "host-key 1"},
		{"key path", node.SSHOptions{User: "u", PrivateKey: "/home/u/.ssh/id_ed25519"}, "file path is not read"},
		{"no user", node.SSHOptions{Password: "pw"}, "user: empty"},
		{"no credentials", node.SSHOptions{User: "u"}, "no password and no private key"},
		{"client version", node.SSHOptions{User: "u", Password: "pw", ClientVersion: "x\r\ny"}, "client-version"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := s.node(tc.o)
			if tc.o.HostKeys != nil && len(tc.o.HostKeys) == 0 {
				n.SSH.HostKeys = nil
			}
			if _, err := New(n, nil); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want %q", err, tc.want)
			}
		})
	}
}

// TestDeadline: a read deadline that passes ends the blocked Read with
// os.ErrDeadlineExceeded (x/crypto's channels have none).
func TestDeadline(t *testing.T) {
	s := startServer(t, "pw", nil)
	c, err := New(s.node(node.SSHOptions{User: "u", Password: "pw", ClientVersion: "OpenSSH_9.2"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn, err := c.DialContext(context.Background(), "tcp", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Read after the deadline: %v", err)
	}
}
