package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
	"github.com/skiffvpn/skiff/test/internal/measure"
)

// perfPrefix is -perf: after the measured runs, -perf-runs more runs per
// direction and client, not counted in the medians, the clients taking
// turns, with Linux perf attached to the client for its window: `perf
// record -g`, the CPU profile with the kernel's share in it, taken the same
// way for both clients (pprof, which both have — sing-box through
// experimental.debug.listen — stops at the system call), and `perf stat`
// of the system calls the client entered. "" none.
var perfPrefix string

// perfRuns is -perf-runs: profiled runs per direction and client.
var perfRuns int

// perfSyscalls are the system calls counted per profiled run: the socket
// reads and writes of both clients (recvfrom is also how skiff peeks),
// QUIC's datagram calls, and the ones that wake or park threads.
var perfSyscalls = []string{
	"read", "write", "readv", "writev", "recvfrom", "sendto", "recvmsg", "sendmsg", "recvmmsg", "sendmmsg",
	"epoll_pwait", "epoll_wait", "futex", "nanosleep", "sched_yield", "tgkill", "madvise",
}

// perfRun is what a profiled run leaves beside its perf files, in
// FILE.json: what the window moved and what the client's CPU did in it.
type perfRun struct {
	Protocol  string  `json:"protocol"`
	Client    string  `json:"client"`
	Direction string  `json:"direction"`
	Bytes     int64   `json:"bytes"`
	Seconds   float64 `json:"seconds"`
	Mbps      float64 `json:"mbps"`
	UserCPU   float64 `json:"user_cpu_s"`
	SysCPU    float64 `json:"sys_cpu_s"`
	Load      string  `json:"load"`
}

// perfProfile runs load once with perf attached to the client pid for the
// window and writes prefix.data (perf record), prefix.stat (perf stat, CSV)
// and prefix.json (perfRun).
func perfProfile(load measure.Load, pid int, prefix string, r perfRun) error {
	secs := strconv.FormatFloat(load.Duration.Seconds(), 'f', 3, 64)
	var events []string
	for _, s := range perfSyscalls {
		events = append(events, "syscalls:sys_enter_"+s)
	}
	events = append(events, "raw_syscalls:sys_enter")
	p := strconv.Itoa(pid)
	record := exec.Command("perf", "record", "-q", "-F", "999", "-g", "-p", p, "-o", prefix+".data", "--", "sleep", secs)
	stat := exec.Command("perf", "stat", "-x", ",", "-e", strings.Join(events, ","), "-p", p, "-o", prefix+".stat", "--", "sleep", secs)
	var u0, s0 float64
	var startErr error
	load.Started = func() {
		u0, s0 = measure.CPUSplit(pid)
		if startErr = record.Start(); startErr != nil {
			return
		}
		startErr = stat.Start()
	}
	m, err := load.Run()
	u1, s1 := measure.CPUSplit(pid)
	if startErr != nil {
		return fmt.Errorf("perf: %w", startErr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, c := range []*exec.Cmd{record, stat} {
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		select {
		case werr := <-done:
			if werr != nil && err == nil {
				err = fmt.Errorf("%s: %w", c.Args[1], werr)
			}
		case <-ctx.Done():
			c.Process.Kill()
			<-done
		}
	}
	if err != nil {
		return err
	}
	r.Bytes, r.Seconds, r.Mbps = m.Bytes, m.Seconds, m.Mbps
	r.UserCPU, r.SysCPU, r.Load = u1-u0, s1-s0, measure.LoadAvg()
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "perf: %s via %s %s: %.0f Mbps, user %.2f s, system %.2f s: %s.{data,stat,json}\n",
		r.Protocol, r.Client, r.Direction, r.Mbps, r.UserCPU, r.SysCPU, prefix)
	return os.WriteFile(prefix+".json", append(b, '\n'), 0o644)
}

// directionName names harness.SinkDownload and SinkUpload.
func directionName(d byte) string {
	if d == harness.SinkUpload {
		return "upload"
	}
	return "download"
}
