package measure

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skiffvpn/skiff/test/harness"
)

// Figures are the runs of one direction.
type Figures struct {
	Mbps        []float64
	ClientCores []float64
	ServerCores []float64
}

// Add appends one run.
func (f *Figures) Add(s Sample) {
	f.Mbps = append(f.Mbps, s.Mbps)
	f.ClientCores = append(f.ClientCores, s.ClientCores)
	f.ServerCores = append(f.ServerCores, s.ServerCores)
}

// MedianMbps is the median throughput over the runs.
func (f Figures) MedianMbps() float64 { return Median(f.Mbps) }

// Efficiency is the median over runs of Mbps per client core.
func (f Figures) Efficiency() float64 {
	var e []float64
	for i := range f.Mbps {
		if f.ClientCores[i] > 0 {
			e = append(e, f.Mbps[i]/f.ClientCores[i])
		}
	}
	return Median(e)
}

// Result is one client's throughput figures for one protocol.
type Result struct {
	Protocol, Client string
	Down, Up         Figures
	PeakRSSMiB       float64
	Err              error // the client could not be measured
}

// Find returns the result of client for proto in rs, nil when there is none.
func Find(rs []Result, proto, client string) *Result {
	for i := range rs {
		if rs[i].Protocol == proto && rs[i].Client == client {
			return &rs[i]
		}
	}
	return nil
}

// PrintTable writes the throughput table of rs, a line for each failed
// client, and a blank line.
func PrintTable(out io.Writer, rs []Result) {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "protocol\tclient\tdown Mbps\tdown Mbps/core\tup Mbps\tup Mbps/core\tpeak RSS MiB\tclient cores (down/up)\tserver cores (down/up)\t")
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(w, "%s\t%s\tfailed\t-\t-\t-\t-\t-\t-\t\n", r.Protocol, r.Client)
			continue
		}
		fmt.Fprintf(w, "%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.2f/%.2f\t%.2f/%.2f\t\n",
			r.Protocol, r.Client, r.Down.MedianMbps(), r.Down.Efficiency(), r.Up.MedianMbps(), r.Up.Efficiency(), r.PeakRSSMiB,
			Median(r.Down.ClientCores), Median(r.Up.ClientCores), Median(r.Down.ServerCores), Median(r.Up.ServerCores))
	}
	w.Flush()
	for _, r := range rs {
		if r.Err != nil {
			fmt.Fprintf(out, "%s via %s failed: %s\n", r.Protocol, r.Client, r.Err)
		}
	}
	fmt.Fprintln(out)
}

// Ratios are skiff's figures over sing-box's for one protocol.
type Ratios struct {
	DownMbps, UpMbps             float64 // throughput
	DownEfficiency, UpEfficiency float64 // Mbps per client core
	PeakRSS                      float64
}

// PrintRatios writes title and a table of skiff / sing-box ratios, a row
// for each of protocols where both were measured; the last column is
// headed last and filled by judge.
func PrintRatios(out io.Writer, title string, rs []Result, protocols []string, last string, judge func(proto string, r Ratios) string) {
	fmt.Fprintln(out, title)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "protocol\tdown throughput\tup throughput\tdown efficiency\tup efficiency\tpeak memory\t%s\t\n", last)
	for _, proto := range protocols {
		sk, sb := Find(rs, proto, "skiff"), Find(rs, proto, "sing-box")
		if sk == nil || sb == nil || sk.Err != nil || sb.Err != nil {
			continue
		}
		r := Ratios{
			DownMbps:       Ratio(sk.Down.MedianMbps(), sb.Down.MedianMbps()),
			UpMbps:         Ratio(sk.Up.MedianMbps(), sb.Up.MedianMbps()),
			DownEfficiency: Ratio(sk.Down.Efficiency(), sb.Down.Efficiency()),
			UpEfficiency:   Ratio(sk.Up.Efficiency(), sb.Up.Efficiency()),
			PeakRSS:        Ratio(sk.PeakRSSMiB, sb.PeakRSSMiB),
		}
		fmt.Fprintf(w, "%s\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t%s\t\n", proto,
			r.DownMbps, r.UpMbps, r.DownEfficiency, r.UpEfficiency, r.PeakRSS, judge(proto, r))
	}
	w.Flush()
}

// PrintMachine writes the report's title and its date, machine and versions
// lines.
func PrintMachine(out io.Writer, title, skiffBin string) {
	fmt.Fprintln(out, "# "+title)
	fmt.Fprintln(out)
	fmt.Fprintf(out, "date:      %s\n", time.Now().UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "machine:   %s, %d logical CPUs, %s, Linux %s\n", cpuModel(), runtime.NumCPU(), memTotal(), kernel())
	fmt.Fprintf(out, "versions:  skiff %s (%s), sing-box %s, %s\n", skiffRevision(skiffBin), filepath.Base(skiffBin), harness.SingBoxVersion, runtime.Version())
}

// LoadAvg is the 1, 5 and 15 minute load average, "unknown" when unread.
func LoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := kB(rest)
			return fmt.Sprintf("%.0f GiB RAM", kb/1024/1024)
		}
	}
	return "? RAM"
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

// skiffRevision is the repository's commit (with +dirty when the tree has
// changes), which is what test/bin/skiff was built from.
func skiffRevision(skiffBin string) string {
	repo := filepath.Dir(filepath.Dir(filepath.Dir(skiffBin)))
	rev, err := exec.Command("git", "-C", repo, "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	s := strings.TrimSpace(string(rev))
	if out, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(out) > 0 {
		s += "+dirty"
	}
	return s
}
