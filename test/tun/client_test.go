package tun_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// runClient is the app side, run inside the client namespace: its traffic
// follows the routes into the TUN.
//
//	tcp ADDR          one echo round trip
//	dialloop ADDR     after a line on stdin, connect until one echo succeeds; print the time
//	udp ADDR          one UDP echo round trip
//	udpsizes ADDR D|U LO-HI|N,N,...  datagrams of each size one way (harness.CheckUDPSizes)
//	resolve NAME      look NAME up with the namespace's resolver
//	many ADDR N       N concurrent echo connections held open together
//	bulk ADDR MIB     send MIB MiB to the sink, print Gbit/s
//	download ADDR MIB receive MIB MiB from the source, print Gbit/s
func runClient(args []string) error {
	if len(args) < 2 {
		return errors.New("client: want a command and an address")
	}
	addr := args[1]
	switch args[0] {
	case "wait":
		deadline := time.Now().Add(15 * time.Second)
		for {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.Close()
				fmt.Println("ok wait", addr)
				return nil
			}
			if time.Now().After(deadline) {
				return err
			}
			time.Sleep(100 * time.Millisecond)
		}
	case "dialloop":
		// Ready, then on a line from stdin: new connections (1 s
		// time-out each, one echo) until one succeeds or 15 s pass;
		// prints how long the first success took from the line.
		fmt.Println("ready")
		if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
			return err
		}
		start := time.Now()
		for time.Since(start) < 15*time.Second {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err == nil {
				c.SetDeadline(time.Now().Add(time.Second))
				err = echo(c, 1024)
				c.Close()
				if err == nil {
					fmt.Printf("ok dialloop %d\n", time.Since(start).Milliseconds())
					return nil
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		return errors.New("dialloop: no connection in 15 s")
	case "tcp":
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := echo(c, 64<<10); err != nil {
			return err
		}
		fmt.Println("ok tcp", addr)
	case "udp":
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		msg := []byte("hello through the tunnel")
		buf := make([]byte, 2048)
		for try := 0; ; try++ {
			c.Write(msg)
			c.SetReadDeadline(time.Now().Add(time.Second))
			n, err := c.Read(buf)
			if err == nil && bytes.Equal(buf[:n], msg) {
				break
			}
			if try == 4 {
				return fmt.Errorf("udp echo %s: %v", addr, err)
			}
		}
		fmt.Println("ok udp", addr)
	case "udpsizes":
		if len(args) != 4 {
			return errors.New("udpsizes: want ADDR D|U SIZES")
		}
		sizes, err := parseSizes(args[3])
		if err != nil {
			return err
		}
		c, err := net.Dial("udp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		if err := harness.CheckUDPSizes(harness.SocketDatagrams{Conn: c}, args[2][0], sizes); err != nil {
			return err
		}
		fmt.Println("ok udpsizes", len(sizes))
	case "resolve":
		// The system's stub resolver, as an app would ask: the Go
		// resolver reads the namespace's resolv.conf.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ips, err := (&net.Resolver{PreferGo: true}).LookupNetIP(ctx, "ip", addr)
		if err != nil {
			return err
		}
		fmt.Println("ok resolve", addr, ips)
	case "many":
		n, _ := strconv.Atoi(args[2])
		conns := make([]net.Conn, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range conns {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := net.DialTimeout("tcp", addr, 10*time.Second)
				if err != nil {
					errs <- err
					return
				}
				conns[i] = c
				c.SetDeadline(time.Now().Add(20 * time.Second))
				if err := echo(c, 1024); err != nil {
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		failed := 0
		var first error
		for err := range errs {
			if first == nil {
				first = err
			}
			failed++
		}
		fmt.Printf("many %d ok %d failed\n", n-failed, failed)
		// Hold them open until told, so that the memory can be read.
		bufio.NewReader(os.Stdin).ReadString('\n')
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
		if first != nil {
			return fmt.Errorf("%d of %d connections failed, first: %w", failed, n, first)
		}
	case "bulk":
		// An 8-byte length, then that many bytes; the sink answers with
		// the count once it has them all (no half-close needed: proxies
		// over TLS cannot carry one).
		mib, _ := strconv.Atoi(args[2])
		total := int64(mib) << 20
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		rand.Read(buf)
		start := time.Now()
		var hdr [8]byte
		binary.BigEndian.PutUint64(hdr[:], uint64(total))
		if _, err := c.Write(hdr[:]); err != nil {
			return err
		}
		for sent := int64(0); sent < total; {
			n, err := c.Write(buf[:min(int64(len(buf)), total-sent)])
			sent += int64(n)
			if err != nil {
				return err
			}
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return fmt.Errorf("bulk: reading the count: %w", err)
		}
		el := time.Since(start)
		got, _ := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if got != total {
			return fmt.Errorf("bulk: sent %d bytes, the sink got %d", total, got)
		}
		fmt.Printf("bulk %d bytes %.3f s %.2f Gbit/s\n", total, el.Seconds(), float64(total)*8/el.Seconds()/1e9)
	case "download":
		mib, _ := strconv.Atoi(args[2])
		total := int64(mib) << 20
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		start := time.Now()
		var hdr [8]byte
		binary.BigEndian.PutUint64(hdr[:], uint64(total))
		if _, err := c.Write(hdr[:]); err != nil {
			return err
		}
		got, err := io.CopyN(io.Discard, c, total)
		if err != nil {
			return fmt.Errorf("download: got %d of %d bytes: %w", got, total, err)
		}
		el := time.Since(start)
		fmt.Printf("download %d bytes %.3f s %.2f Gbit/s\n", total, el.Seconds(), float64(total)*8/el.Seconds()/1e9)
	default:
		return fmt.Errorf("client: unknown command %q", args[0])
	}
	return nil
}

// echo writes n random bytes and reads them back.
func echo(c net.Conn, n int) error {
	out := make([]byte, n)
	rand.Read(out)
	errc := make(chan error, 1)
	go func() { _, err := c.Write(out); errc <- err }()
	in := make([]byte, n)
	if _, err := io.ReadFull(c, in); err != nil {
		return fmt.Errorf("echo via %s: %w", c.RemoteAddr(), err)
	}
	if err := <-errc; err != nil {
		return err
	}
	if !bytes.Equal(in, out) {
		return errors.New("echo: data differs")
	}
	return nil
}

// parseSizes reads "LO-HI" or "N,N,...".
func parseSizes(s string) ([]int, error) {
	if lo, hi, ok := strings.Cut(s, "-"); ok {
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		if err1 != nil || err2 != nil || a < 1 || b < a {
			return nil, fmt.Errorf("bad size range %q", s)
		}
		return harness.SizeRange(a, b), nil
	}
	var sizes []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad size %q", f)
		}
		sizes = append(sizes, n)
	}
	return sizes, nil
}
