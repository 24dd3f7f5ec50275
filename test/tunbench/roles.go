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
	"sync/atomic"
	"syscall"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
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
	Mbps        float64 `json:"mbps"`
	ClientCores float64 `json:"client_cores"`
	ServerCores float64 `json:"server_cores"`
	Bytes       int64   `json:"bytes"`
	TUNBytes    int64   `json:"tun_bytes"` // bytes through the client's TUN device in the window (rx+tx)
	Seconds     float64 `json:"seconds"`
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

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var d net.Dialer
	conns := make([]net.Conn, 0, *streams)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range *streams {
		c, err := d.DialContext(ctx, "tcp", *sink)
		if err != nil {
			return fmt.Errorf("dial sink %s: %w", *sink, err)
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte{cmd}); err != nil {
			return err
		}
	}
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		stop  atomic.Bool
	)
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 64<<10)
			if cmd == harness.SinkUpload {
				copy(buf, strings.Repeat("skiff bench data", len(buf)/16))
			}
			for !stop.Load() {
				var n int
				var err error
				if cmd == harness.SinkDownload {
					n, err = c.Read(buf)
				} else {
					n, err = c.Write(buf)
				}
				total.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(500 * time.Millisecond) // ramp-up, not counted
	var prof chan error
	if *pprofURL != "" && *pprofOut != "" {
		prof = make(chan error, 1)
		go func() { prof <- fetchProfile(*pprofURL, *dur, *pprofOut) }()
	}
	var heap chan error
	if *pprofURL != "" && *heapOut != "" {
		heap = make(chan error, 1)
		go func() {
			time.Sleep(*dur / 2)
			base := strings.TrimSuffix(*pprofURL, "profile")
			err := fetchTo(base+"heap", *heapOut)
			if err == nil {
				err = fetchTo(base+"heap?debug=1", *heapOut+".txt")
			}
			heap <- err
		}()
	}
	b0, c0, s0, n0, t0 := total.Load(), cpuSeconds(*clientPid), cpuSeconds(*serverPid), devBytes(*tunDev), time.Now()
	time.Sleep(*dur)
	b1, c1, s1, n1, t1 := total.Load(), cpuSeconds(*clientPid), cpuSeconds(*serverPid), devBytes(*tunDev), time.Now()
	stop.Store(true)
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
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
	el := t1.Sub(t0).Seconds()
	r := loadResult{
		Mbps:        float64(b1-b0) * 8 / el / 1e6,
		ClientCores: (c1 - c0) / el,
		ServerCores: (s1 - s0) / el,
		Bytes:       b1 - b0,
		TUNBytes:    n1 - n0,
		Seconds:     el,
	}
	if r.Bytes == 0 {
		return fmt.Errorf("no data moved in %v", *dur)
	}
	b, _ := json.Marshal(r)
	fmt.Println(resultPrefix + string(b))
	return nil
}

// connsResult is what the conns role reports.
type connsResult struct {
	OK       int     `json:"ok"`
	Failed   int     `json:"failed"`
	FirstErr string  `json:"first_err,omitempty"`
	Seconds  float64 `json:"seconds"` // time to open and check them all
}

// roleConns opens n TCP connections to the echo server at once, checks a
// round trip on each, prints "OPEN" with the counts, holds them open for
// hold and closes them all.
func roleConns(args []string) error {
	fs := flag.NewFlagSet("conns", flag.ContinueOnError)
	addr := fs.String("addr", "", "echo server address")
	n := fs.Int("n", 500, "connections")
	hold := fs.Duration("hold", 3*time.Second, "how long to keep them open after they are up")
	if err := fs.Parse(args); err != nil {
		return err
	}
	start := time.Now()
	conns := make([]net.Conn, *n)
	errs := make([]error, *n)
	var wg sync.WaitGroup
	for i := range *n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.DialTimeout("tcp", *addr, 20*time.Second)
			if err != nil {
				errs[i] = err
				return
			}
			conns[i] = c
			errs[i] = echoCheck(c, 20*time.Second)
		}()
	}
	wg.Wait()
	r := connsResult{Seconds: time.Since(start).Seconds()}
	for _, err := range errs {
		if err != nil {
			r.Failed++
			if r.FirstErr == "" {
				r.FirstErr = err.Error()
			}
		} else {
			r.OK++
		}
	}
	b, _ := json.Marshal(r)
	fmt.Println("OPEN " + string(b))
	time.Sleep(*hold)
	// Check they are all still alive before closing them.
	alive := 0
	for _, c := range conns {
		if c != nil && echoCheck(c, 10*time.Second) == nil {
			alive++
		}
	}
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
	fmt.Printf("%s{\"alive_after_hold\":%d}\n", resultPrefix, alive)
	return nil
}

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

// fetchProfile saves a CPU profile over d from url to path.
func fetchProfile(url string, d time.Duration, path string) error {
	secs := max(1, int(d.Seconds()))
	return fetchWithin(fmt.Sprintf("%s?seconds=%d", url, secs), path, d+30*time.Second)
}

// fetchTo saves what a GET of url returns to path.
func fetchTo(url, path string) error { return fetchWithin(url, path, 30*time.Second) }

func fetchWithin(url, path string, timeout time.Duration) error {
	client := &http.Client{Timeout: timeout}
	resp, err := client.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("pprof: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
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
