package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/app/instance"
)

const link = "clash://install-config?url=https%3A%2F%2Fsub.example%2Fs&name=Lab"

func TestParseLaunch(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		open     bool
		tray     []string // windowArgs(true, links)
		fallback []string // windowArgs(false, links)
	}{
		{"login item", nil, false,
			[]string{"--socket", "S", "--tray-process", "--"}, []string{"--socket", "S", "--"}},
		{"app menu", []string{"--open"}, true,
			[]string{"--socket", "S", "--tray-process", "--"}, []string{"--socket", "S", "--"}},
		{"deep link", []string{"--open", link}, true,
			[]string{"--socket", "S", "--tray-process", "--", link}, []string{"--socket", "S", "--", link}},
		{"a link opens", []string{link}, true,
			[]string{"--socket", "S", "--tray-process", "--", link}, []string{"--socket", "S", "--", link}},
		{"a flag after the link is a link", []string{link, "--config-dir=/x"}, true,
			[]string{"--socket", "S", "--tray-process", "--", link, "--config-dir=/x"}, []string{"--socket", "S", "--", link, "--config-dir=/x"}},
		{"window flags", []string{"--config-dir", "/p", "--log-level", "debug"}, false,
			[]string{"--socket", "S", "--config-dir", "/p", "--log-level", "debug", "--tray-process", "--"},
			[]string{"--socket", "S", "--config-dir", "/p", "--log-level", "debug", "--"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := parseLaunch(append([]string{"--socket", "S"}, tc.args...), io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			if l.open != tc.open {
				t.Errorf("open %v, want %v", l.open, tc.open)
			}
			if got := l.windowArgs(true, l.links); !reflect.DeepEqual(got, tc.tray) {
				t.Errorf("the tray's window: %q, want %q", got, tc.tray)
			}
			if got := l.windowArgs(false, l.links); !reflect.DeepEqual(got, tc.fallback) {
				t.Errorf("the window alone: %q, want %q", got, tc.fallback)
			}
			links, err := handoffLinks(l.handoff())
			if err != nil || !reflect.DeepEqual(links, l.links) {
				t.Errorf("hand-over round trip: %q, %v; want %q", links, err, l.links)
			}
		})
	}
	if _, err := parseLaunch([]string{"--bogus"}, io.Discard); err == nil {
		t.Error("an unknown flag was accepted")
	}
}

func TestHandoffLinks(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		links []string
		ok    bool
	}{
		{[]string{"open"}, []string{}, true},
		{[]string{"open", link}, []string{link}, true},
		{nil, nil, false},
		{[]string{link}, nil, false},
		{[]string{"quit"}, nil, false},
	} {
		links, err := handoffLinks(tc.args)
		if (err == nil) != tc.ok || tc.ok && !reflect.DeepEqual(links, tc.links) {
			t.Errorf("handoffLinks(%q) = %q, %v", tc.args, links, err)
		}
	}
}

// build compiles the package pkg into dir/name.
func build(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	out := filepath.Join(dir, name)
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, b)
	}
	return out
}

// recorded reads the fake window's log: the argument lists it was started
// with, waiting up to a few seconds for n of them.
func recorded(t *testing.T, log string, n int) [][]string {
	t.Helper()
	var got [][]string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		got = nil
		f, err := os.Open(log)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var a []string
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("%q: %v", sc.Text(), err)
			}
			got = append(got, a)
		}
		f.Close()
		if len(got) >= n {
			break
		}
	}
	return got
}

// TestWithoutService runs skiff-tray, built, with a stand-in skiff-window
// beside it and no service at the socket: it becomes the window (the core
// inside), its links passed on after "--".
func TestWithoutService(t *testing.T) {
	dir := t.TempDir()
	build(t, dir, "skiff-window", "./testdata/fakewindow")
	tray := build(t, dir, "skiff-tray", ".")
	sock := filepath.Join(dir, "none.sock")
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"login item", nil, []string{"--socket", sock, "--"}},
		{"app menu with a link", []string{"--open", link}, []string{"--socket", sock, "--", link}},
		{"own profile", []string{"--config-dir", dir, link}, []string{"--socket", sock, "--config-dir", dir, "--", link}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "args")
			cmd := exec.Command(tray, append([]string{"--socket", sock}, tc.args...)...)
			cmd.Env = append(os.Environ(), "SKIFF_FAKE_WINDOW_LOG="+log)
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			if got := recorded(t, log, 1); !reflect.DeepEqual(got, [][]string{tc.want}) {
				t.Errorf("the window was started with %q, want %q", got, tc.want)
			}
		})
	}
}

// TestTrayHandoff: the running tray (its windows and its single instance,
// real processes and a real socket) opens a window for each later launch,
// with that launch's links.
func TestTrayHandoff(t *testing.T) {
	dir := t.TempDir()
	win := build(t, dir, "skiff-window", "./testdata/fakewindow")
	log := filepath.Join(dir, "args")
	t.Setenv("SKIFF_FAKE_WINDOW_LOG", log)
	cfg := instance.Config{Name: "tray", Dir: filepath.Join(dir, "run")}
	ctx := context.Background()
	first, err := instance.Acquire(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &windows{path: win, l: launch{socket: "S"}, stdout: io.Discard, stderr: io.Discard, log: slog.New(slog.DiscardHandler)}
	w.serve(first.Messages())

	for _, args := range [][]string{{"--open", link}, nil} {
		l, err := parseLaunch(append([]string{"--socket", "S2"}, args...), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := instance.Acquire(ctx, cfg, l.handoff()); !errors.Is(err, instance.ErrRunning) {
			t.Fatalf("a second launch: %v, want ErrRunning", err)
		}
	}
	want := [][]string{
		{"--socket", "S", "--tray-process", "--"},
		{"--socket", "S", "--tray-process", "--", link},
	}
	got := recorded(t, log, 2) // the two processes write in either order
	slices.SortFunc(got, func(a, b []string) int { return len(a) - len(b) })
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the windows started: %q, want %q", got, want)
	}
	first.Close()
	w.wait()
}
