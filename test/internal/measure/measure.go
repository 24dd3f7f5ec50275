// Package measure holds what the two client benchmarks share: the SOCKS-mode
// one (test/cmd/bench) and the TUN-mode one (test/tunbench) drive the same
// sing-box servers with the same load and report the same figures, so the
// load loop, the /proc readers, the medians, the report tables and the
// machine header live here once and the two programs differ only in how
// their client is started and reached.
package measure

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// Settings are the command-line settings both benchmarks take.
type Settings struct {
	Duration   time.Duration // measured time per direction per run
	Warmup     time.Duration // warm-up transfer before a client's runs
	Runs       int           // runs per direction; the median is reported
	Streams    int           // concurrent TCP streams
	Protocols  []string      // hysteria2, tuic, anytls, vless-ws, vless-tcp, ss2022, trojan-tls, trojan-ws, vmess-tls, vmess-ws, vmess-tcp, vmess-h2, vless-reality, vless-reality-vision
	Clients    []string      // skiff, sing-box
	CPUProfile string        // prefix of skiff's CPU profile files; "" none
	// ProfileUpload profiles the first upload run instead of the download.
	ProfileUpload bool
	// The many-connection load (Conns): how many connections (0 none),
	// bytes each way per connection, how long they are held open and idle,
	// how long after they close the idle figures are read; ConnsOnly skips
	// the throughput runs.
	Conns     int
	ConnSize  int
	Hold      time.Duration
	IdleWait  time.Duration
	ConnsOnly bool

	quick     bool
	quickRuns int
	protocols string
	clients   string
}

// Register adds the shared flags to fs. quickHelp and profileHelp are the
// help texts of -quick and -cpuprofile; quickRuns > 0 makes -quick also set
// -runs to it unless -runs is given.
func (s *Settings) Register(fs *flag.FlagSet, quickHelp, profileHelp string, quickRuns int) {
	s.quickRuns = quickRuns
	fs.DurationVar(&s.Duration, "duration", 30*time.Second, "measured time per direction per run")
	fs.DurationVar(&s.Warmup, "warmup", 5*time.Second, "warm-up transfer before the runs of each client")
	fs.IntVar(&s.Runs, "runs", 3, "runs per direction; the median is reported")
	fs.IntVar(&s.Streams, "streams", 16, "concurrent TCP streams")
	fs.BoolVar(&s.quick, "quick", false, quickHelp)
	fs.StringVar(&s.protocols, "protocols", "hysteria2,vless-ws", "comma-separated: hysteria2, hysteria (v1), tuic, anytls, vless-ws, vless-tcp, ss2022, trojan-tls, trojan-ws, vmess-tls, vmess-ws, vmess-tcp, vmess-h2 (VMess with aes-128-gcm; h2: the V2Ray HTTP/2 transport over TLS), vless-reality, vless-reality-vision (fp=chrome both)")
	fs.StringVar(&s.clients, "clients", "skiff,sing-box", "comma-separated: skiff, sing-box")
	fs.StringVar(&s.CPUProfile, "cpuprofile", "", profileHelp)
	fs.BoolVar(&s.ProfileUpload, "profile-upload", false, "with -cpuprofile: profile the first upload run instead of the download")
	fs.IntVar(&s.Conns, "conns", 500, "many-connection phase: this many concurrent connections to an echo server through a fresh client (0: none)")
	fs.IntVar(&s.ConnSize, "conn-size", 1<<20, "many-connection phase: bytes each way per connection, all at once")
	fs.DurationVar(&s.Hold, "hold", 30*time.Second, "many-connection phase: how long the connections stay open and idle after the transfer")
	fs.DurationVar(&s.IdleWait, "idle-wait", 30*time.Second, "many-connection phase: how long after they close the idle figures are read")
	fs.BoolVar(&s.ConnsOnly, "conns-only", false, "run only the many-connection phase, no throughput runs")
}

// ProfiledDirection is the direction (harness.SinkDownload or SinkUpload)
// whose first run is profiled.
func (s *Settings) ProfiledDirection(download, upload byte) byte {
	if s.ProfileUpload {
		return upload
	}
	return download
}

// Resolve applies -quick (5 s per direction, 2 s warm-up, the quick runs,
// 5 s hold and idle wait, each unless given on the command line) and splits the lists. Call
// it after fs has been parsed.
func (s *Settings) Resolve(fs *flag.FlagSet) {
	if s.quick {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		if !set["duration"] {
			s.Duration = 5 * time.Second
		}
		if !set["warmup"] {
			s.Warmup = 2 * time.Second
		}
		if !set["hold"] {
			s.Hold = 5 * time.Second
		}
		if !set["idle-wait"] {
			s.IdleWait = 5 * time.Second
		}
		if !set["runs"] && s.quickRuns > 0 {
			s.Runs = s.quickRuns
		}
	}
	s.Protocols = strings.Split(s.protocols, ",")
	s.Clients = strings.Split(s.clients, ",")
}

// Server is the benchmark's sing-box server for protocol proto on port.
func Server(proto string, port int, cert *harness.Cert) (*harness.Server, error) {
	s := &harness.Server{Port: port, Cert: cert, Password: "bench-password", UUID: "6f1c3e0a-9d2b-4c7e-8f5a-1b2c3d4e5f60", Path: "/ws"}
	switch k := harness.Kind(proto); k {
	case harness.Hysteria2, harness.VLESSWS, harness.VLESSTCP, harness.TrojanTLS, harness.TrojanWS, harness.TUIC, harness.AnyTLS, harness.HysteriaV1:
		s.Kind = k
	case harness.VLESSGRPC: // VLESS over gRPC (gun) over TLS
		s.Kind = k
	case "ss2022": // Shadowsocks 2022, the method the seed benchmark ranks
		s.Kind, s.Method, s.Password = harness.Shadowsocks, "2022-blake3-aes-128-gcm", "YmVuY2gtcHNrLTE2Ynl0ZQ=="
	case harness.VMessTLS, harness.VMessWS, harness.VMessTCP, harness.VMessH2:
		s.Kind, s.Security = k, "aes-128-gcm"
	case harness.VLESSReality, harness.VLESSRealityVision:
		// The site whose handshake the server borrows; the caller closes
		// s.Site after the server.
		keys, err := harness.NewRealityKeys()
		if err != nil {
			return nil, err
		}
		site, err := harness.StartTLSSite(cert)
		if err != nil {
			return nil, err
		}
		s.Kind, s.Reality, s.ShortID, s.Site = k, keys, "0123abcd", site
	default:
		return nil, fmt.Errorf("unknown protocol %q", proto)
	}
	return s, nil
}

// StartServer starts sing-box (sbBin) serving proto on a free loopback
// port with cert, its config written in dir, and returns the server's
// description and process (the caller stops it, and closes s.Site when
// set).
func StartServer(proto, sbBin, dir string, cert *harness.Cert) (*harness.Server, *harness.Process, error) {
	port, err := harness.FreePort()
	if err != nil {
		return nil, nil, err
	}
	s, err := Server(proto, port, cert)
	if err != nil {
		return nil, nil, err
	}
	cfg, err := s.ServerConfig()
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := harness.StartSingBox(ctx, sbBin, dir, "server-"+proto, cfg)
	if err != nil {
		return nil, nil, err
	}
	return s, p, nil
}

// Sample is one direction of one run. Its JSON form is what a load process
// reports to the benchmark that started it.
type Sample struct {
	Mbps        float64 `json:"mbps"`
	ClientCores float64 `json:"client_cores"` // CPU the client process used, in cores
	ServerCores float64 `json:"server_cores"` // likewise the server
	Bytes       int64   `json:"bytes"`        // payload moved in the window
	Seconds     float64 `json:"seconds"`      // length of the window
	Counted     int64   `json:"-"`            // what Load.Counter grew by in the window
}

// Load is one direction of load through a client.
type Load struct {
	// Dial opens one stream to the sink/source (harness.SinkSource).
	Dial func(ctx context.Context) (net.Conn, error)
	// Dir is harness.SinkDownload or harness.SinkUpload.
	Dir       byte
	Streams   int
	Duration  time.Duration // the measured window, after a 500 ms ramp-up
	ClientPid int           // whose CPU time is measured; 0 none
	ServerPid int           // likewise
	// Started, when set, is called as the window opens.
	Started func()
	// Counter, when set, is read at both ends of the window; Sample.Counted
	// is its growth.
	Counter func() int64
}

// Run opens l.Streams streams, lets them ramp up, then counts the bytes
// moved in direction l.Dir and the CPU time the client and server used over
// l.Duration. It closes the streams before it returns.
func (l Load) Run() (Sample, error) {
	var m Sample
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conns := make([]net.Conn, 0, l.Streams)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range l.Streams {
		c, err := l.Dial(ctx)
		if err != nil {
			return m, err
		}
		conns = append(conns, c)
		if _, err := c.Write([]byte{l.Dir}); err != nil {
			return m, err
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
			if l.Dir == harness.SinkUpload {
				copy(buf, strings.Repeat("skiff bench data", len(buf)/16))
			}
			for !stop.Load() {
				var n int
				var err error
				if l.Dir == harness.SinkDownload {
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
	if l.Started != nil {
		l.Started()
	}
	counter := l.Counter
	if counter == nil {
		counter = func() int64 { return 0 }
	}
	b0, c0, s0, n0, t0 := total.Load(), CPUSeconds(l.ClientPid), CPUSeconds(l.ServerPid), counter(), time.Now()
	time.Sleep(l.Duration)
	b1, c1, s1, n1, t1 := total.Load(), CPUSeconds(l.ClientPid), CPUSeconds(l.ServerPid), counter(), time.Now()
	stop.Store(true)
	for _, c := range conns {
		c.Close()
	}
	wg.Wait()
	el := t1.Sub(t0).Seconds()
	m = Sample{
		Mbps:        float64(b1-b0) * 8 / el / 1e6,
		ClientCores: (c1 - c0) / el,
		ServerCores: (s1 - s0) / el,
		Bytes:       b1 - b0,
		Seconds:     el,
		Counted:     n1 - n0,
	}
	if m.Bytes == 0 {
		return m, fmt.Errorf("no data moved in %v", l.Duration)
	}
	return m, nil
}

// clockTicks is USER_HZ, the unit of utime and stime in /proc (100 on every
// Linux architecture Go supports).
const clockTicks = 100

// CPUSeconds returns utime+stime of pid from /proc/PID/stat (0 for pid 0
// or a process that is gone).
func CPUSeconds(pid int) float64 {
	u, s := CPUSplit(pid)
	return u + s
}

// CPUSplit returns utime and stime of pid from /proc/PID/stat, in seconds:
// the CPU it spent in its own code and in the kernel (0, 0 for pid 0 or a
// process that is gone).
func CPUSplit(pid int) (user, system float64) {
	if pid == 0 {
		return 0, 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	s := string(b)
	// The command name may contain spaces; fields resume after its ')'.
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return u / clockTicks, st / clockTicks
}

// MemMiB returns a field of /proc/PID/status (VmRSS, VmHWM) in MiB.
func MemMiB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := kB(rest)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("%s not in /proc/%d/status", field, pid)
}

// kB reads a "  1234 kB" value of /proc.
func kB(s string) (float64, error) {
	return strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "kB")), 64)
}

// Median is the median of v, 0 for none.
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Ratio is a/b, 0 when b is 0.
func Ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// FetchProfile saves a CPU profile over d from url (a /debug/pprof/profile
// endpoint) to path.
func FetchProfile(url string, d time.Duration, path string) error {
	secs := max(1, int(d.Seconds()))
	return Fetch(fmt.Sprintf("%s?seconds=%d", url, secs), path, d+30*time.Second)
}

// Fetch saves what a GET of url returns to path, giving up after timeout.
func Fetch(url, path string, timeout time.Duration) error {
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
