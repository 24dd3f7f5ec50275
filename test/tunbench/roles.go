package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

// The program re-executes itself inside the namespaces (`ip netns exec NS
// tunbench role NAME …`) for the parts that must live there: the
// sink/source and echo servers, and the load generators that connect
// through the client's TUN.

// resultPrefix starts the line on which a load role prints its result.
const resultPrefix = "TUNBENCH-RESULT "

// runRole runs one role with its flags and returns its error.
func runRole(name string, args []string) error {
	switch name {
	case "serve":
		return roleServe(args)
	case "load":
		return roleLoad(args)
	case "conns":
		return roleConns(args)
	case "probe":
		return roleProbe(args)
	case "get":
		return roleGet(args)
	}
	return fmt.Errorf("unknown role %q", name)
}

// roleServe runs the sink/source on sinkPort and a TCP echo on echoPort,
// on every address of the server namespace, until SIGTERM.
func roleServe(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	sink, err := net.Listen("tcp", ":"+strconv.Itoa(sinkPort))
	if err != nil {
		return err
	}
	echo, err := net.Listen("tcp", ":"+strconv.Itoa(echoPort))
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	serve := func(ln net.Listener, h func(net.Conn)) {
		defer wg.Done()
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
	wg.Add(2)
	go serve(sink, harness.SinkSource)
	go serve(echo, harness.EchoTCP)
	fmt.Println("serving")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	sink.Close()
	echo.Close()
	wg.Wait()
	return nil
}

// roleProbe dials the echo server through the TUN until one round trip
// succeeds, or the time-out passes.
func roleProbe(args []string) error {
	fs := flag.NewFlagSet("probe", flag.ContinueOnError)
	addr := fs.String("addr", "", "echo server address")
	timeout := fs.Duration("timeout", 20*time.Second, "give up after")
	if err := fs.Parse(args); err != nil {
		return err
	}
	deadline := time.Now().Add(*timeout)
	var last error
	for time.Now().Before(deadline) {
		if last = echoOnce(*addr, 3*time.Second); last == nil {
			fmt.Println("probe ok")
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("probe %s: %w", *addr, last)
}

// echoOnce opens a connection to an echo server, checks one round trip and
// closes it.
func echoOnce(addr string, timeout time.Duration) error {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	return echoCheck(c, timeout)
}

// echoCheck sends a short message and reads it back.
func echoCheck(c net.Conn, timeout time.Duration) error {
	c.SetDeadline(time.Now().Add(timeout))
	defer c.SetDeadline(time.Time{})
	msg := []byte("skiff tunbench echo 0123456789abcdef")
	if _, err := c.Write(msg); err != nil {
		return err
	}
	got := make([]byte, len(msg))
	if _, err := io.ReadFull(c, got); err != nil {
		return err
	}
	if string(got) != string(msg) {
		return errors.New("echo returned other bytes")
	}
	return nil
}

// loadResult is what the load role reports.
type loadResult struct {
	measure.Sample
	TUNBytes int64 `json:"tun_bytes"` // bytes through the client's TUN device in the window (rx+tx)
}

// roleLoad opens streams TCP connections to the sink/source (through the
// TUN, since the client's routes send it there), lets them ramp up, then
// counts the bytes moved in one direction and the CPU time the client and
// server processes used over the window. It prints one result line.
func roleLoad(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	sink := fs.String("sink", "", "sink/source address")
	dirn := fs.String("dir", "D", "D (download) or U (upload)")
	streams := fs.Int("streams", 16, "concurrent TCP streams")
	dur := fs.Duration("duration", 5*time.Second, "measured window")
	clientPid := fs.Int("client-pid", 0, "client process whose CPU time is measured")
	serverPid := fs.Int("server-pid", 0, "server process whose CPU time is measured")
	tunDev := fs.String("tun", "", "the client's TUN device (its byte counters prove the traffic went through it)")
	pprofURL := fs.String("pprof", "", "fetch a CPU profile of the window from this /debug/pprof/profile URL")
	pprofOut := fs.String("pprof-out", "", "where to write the profile")
	heapOut := fs.String("heap-out", "", "with -pprof: write a heap profile taken halfway through the window here (and its text form to FILE.txt)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if len(*dirn) != 1 || (*dirn != "D" && *dirn != "U") {
		return fmt.Errorf("bad -dir %q", *dirn)
	}
	cmd := (*dirn)[0]

	var (
		d    net.Dialer
		prof chan error
		heap chan error
	)
	l := measure.Load{
		Dial: func(ctx context.Context) (net.Conn, error) {
			c, err := d.DialContext(ctx, "tcp", *sink)
			if err != nil {
				return nil, fmt.Errorf("dial sink %s: %w", *sink, err)
			}
			return c, nil
		},
		Dir:       cmd,
		Streams:   *streams,
		Duration:  *dur,
		ClientPid: *clientPid,
		ServerPid: *serverPid,
		Counter:   func() int64 { return devBytes(*tunDev) },
		Started: func() {
			if *pprofURL != "" && *pprofOut != "" {
				prof = make(chan error, 1)
				go func() { prof <- measure.FetchProfile(*pprofURL, *dur, *pprofOut) }()
			}
			if *pprofURL != "" && *heapOut != "" {
				heap = make(chan error, 1)
				go func() {
					time.Sleep(*dur / 2)
					base := strings.TrimSuffix(*pprofURL, "profile")
					err := measure.Fetch(base+"heap", *heapOut, 30*time.Second)
					if err == nil {
						err = measure.Fetch(base+"heap?debug=1", *heapOut+".txt", 30*time.Second)
					}
					heap <- err
				}()
			}
		},
	}
	m, err := l.Run()
	if prof != nil {
		if err := <-prof; err != nil {
			fmt.Fprintln(os.Stderr, "cpuprofile:", err)
		}
	}
	if heap != nil {
		if err := <-heap; err != nil {
			fmt.Fprintln(os.Stderr, "heap profile:", err)
		}
	}
	if err != nil {
		return err
	}
	r := loadResult{Sample: m, TUNBytes: m.Counted}
	b, _ := json.Marshal(r)
	fmt.Println(resultPrefix + string(b))
	return nil
}

// roleConns runs the many-connection load (measure.Conns) against the echo
// server through the TUN. At each phase it prints "PHASE name" and gives the
// benchmark phaseGrace to read the client's figures; at the end it prints
// the outcome after resultPrefix.
func roleConns(args []string) error {
	fs := flag.NewFlagSet("conns", flag.ContinueOnError)
	addr := fs.String("addr", "", "echo server address")
	n := fs.Int("n", 500, "connections")
	size := fs.Int("size", 1<<20, "bytes each way per connection")
	hold := fs.Duration("hold", 30*time.Second, "how long they stay open and idle after the transfer")
	idle := fs.Duration("idle", 30*time.Second, "how long after they close the last figures are read")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var d net.Dialer
	load := measure.Conns{
		Dial: func(ctx context.Context) (net.Conn, error) { return d.DialContext(ctx, "tcp", *addr) },
		N:    *n, Size: *size, Hold: *hold, Idle: *idle,
	}
	out, err := load.Run(context.Background(), func(phase string) {
		fmt.Printf("PHASE %s\n", phase)
		time.Sleep(phaseGrace)
	})
	if err != nil {
		return err
	}
	b, _ := json.Marshal(out)
	fmt.Println(resultPrefix + string(b))
	return nil
}

// phaseGrace is how long the conns role waits at each phase for the
// benchmark to read the client's figures.
const phaseGrace = 1500 * time.Millisecond

// devBytes returns rx+tx bytes of a network device of this namespace, 0
// when there is none.
func devBytes(dev string) int64 {
	if dev == "" {
		return 0
	}
	var sum int64
	for _, f := range []string{"rx_bytes", "tx_bytes"} {
		b, err := os.ReadFile("/sys/class/net/" + dev + "/statistics/" + f)
		if err != nil {
			return 0
		}
		v, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		sum += v
	}
	return sum
}

// roleGet prints the body of an HTTP GET (skiff's pprof endpoints, which
// listen on the client namespace's loopback).
func roleGet(args []string) error {
	fs := flag.NewFlagSet("get", flag.ContinueOnError)
	u := fs.String("url", "", "URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	client := &http.Client{Timeout: 20 * time.Second}
	resp, err := client.Get(*u)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", *u, resp.Status)
	}
	_, err = io.Copy(os.Stdout, resp.Body)
	return err
}
