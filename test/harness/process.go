package harness

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a started program whose standard output and error are
// captured together.
type Process struct {
	Name string // short name used in logs and file names

	cmd  *exec.Cmd
	out  *outputBuffer
	done chan struct{} // closed when the process has exited
	err  error         // exit status; read after done
}

// spawnReq is one command for the spawner thread to start.
type spawnReq struct {
	cmd *exec.Cmd
	err chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnReq
)

// spawn starts cmd from one OS thread that lives as long as the test
// binary. Pdeathsig kills a child when the thread that forked it exits, not
// the process; Go ends threads that a goroutine locked and never unlocked
// (the namespace helpers do exactly that), so a child forked from such a
// thread would be killed at a random moment (seen: a restarted server
// "exited (signal: killed)" before it printed anything).
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked, and this goroutine never returns
			for r := range spawnCh {
				r.err <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawnCh <- spawnReq{cmd: cmd, err: errc}
	return <-errc
}

// StartProcess starts bin with args. The caller owns the process and must
// Stop it.
func StartProcess(name, bin string, args ...string) (*Process, error) {
	p := &Process{Name: name, out: &outputBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Stdout = p.out
	p.cmd.Stderr = p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := spawn(p.cmd); err != nil {
		return nil, fmt.Errorf("harness: start %s: %w", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// Start starts bin for the test t and stops it in t.Cleanup. When t has
// failed, or SKIFF_TEST_LOGS=1, the process's output goes to the test log;
// on failure also to test/out/<test>/<name>.log.
func Start(t testing.TB, name, bin string, args ...string) *Process {
	t.Helper()
	p, err := StartProcess(name, bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() || os.Getenv("SKIFF_TEST_LOGS") == "1" {
			t.Logf("--- output of %s (%s) ---\n%s--- end of %s ---", name, p.ExitStatus(), p.Output(), name)
		}
		if t.Failed() {
			if path, err := p.SaveOutput(t.Name()); err == nil {
				t.Logf("output of %s saved to %s", name, path)
			}
		}
	})
	return p
}

// Pid returns the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output returns everything the process has printed so far.
func (p *Process) Output() string { return p.out.String() }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitStatus describes how the process ended, or "running".
func (p *Process) ExitStatus() string {
	select {
	case <-p.done:
		if p.err == nil {
			return "exit status 0"
		}
		return p.err.Error()
	default:
		return "running"
	}
}

// ExitCode returns the exit code after the process has ended (-1 when a
// signal ended it).
func (p *Process) ExitCode() int {
	<-p.done
	return p.cmd.ProcessState.ExitCode()
}

// Wait waits for the process to exit by itself.
func (p *Process) Wait(ctx context.Context) error {
	select {
	case <-p.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("harness: %s did not exit: %w", p.Name, ctx.Err())
	}
}

// WaitOutput waits until the output matches re and returns the first match
// (with its submatches). It fails early when the process exits.
func (p *Process) WaitOutput(ctx context.Context, re *regexp.Regexp) ([]string, error) {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if m := re.FindStringSubmatch(p.Output()); m != nil {
			return m, nil
		}
		select {
		case <-p.done:
			if m := re.FindStringSubmatch(p.Output()); m != nil {
				return m, nil
			}
			return nil, fmt.Errorf("harness: %s exited (%s) before printing %q; output:\n%s", p.Name, p.ExitStatus(), re, tail(p.Output(), 40))
		case <-ctx.Done():
			return nil, fmt.Errorf("harness: %s did not print %q: %w; output:\n%s", p.Name, re, ctx.Err(), tail(p.Output(), 40))
		case <-tick.C:
		}
	}
}

// WaitText waits until the output contains s.
func (p *Process) WaitText(ctx context.Context, s string) error {
	_, err := p.WaitOutput(ctx, regexp.MustCompile(regexp.QuoteMeta(s)))
	return err
}

// Stop sends SIGTERM, and SIGKILL if the process has not exited within five
// seconds. It waits for the exit and is safe to call more than once.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		p.cmd.Process.Kill()
		<-p.done
	}
}

// Kill ends the process at once with SIGKILL and waits for the exit.
func (p *Process) Kill() {
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Kill()
	<-p.done
}

// SaveOutput writes the output to test/out/<test>/<name>.log and returns
// the path.
func (p *Process) SaveOutput(test string) (string, error) {
	out, err := OutDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(out, sanitize(test))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, sanitize(p.Name)+".log")
	return path, os.WriteFile(path, []byte(p.Output()), 0o644)
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func sanitize(s string) string { return unsafeName.ReplaceAllString(s, "_") }

func tail(s string, lines int) string {
	parts := strings.SplitAfter(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "")
}

// outputBuffer collects a process's output; exec copies into it from its
// own goroutines, which cmd.Wait ends.
type outputBuffer struct {
	mu sync.Mutex
	b  []byte
}

// maxOutput bounds what is kept of a chatty process.
const maxOutput = 8 << 20

func (o *outputBuffer) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.b)+len(p) > maxOutput {
		return len(p), nil
	}
	o.b = append(o.b, p...)
	return len(p), nil
}

func (o *outputBuffer) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return string(o.b)
}
