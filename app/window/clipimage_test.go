package window

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.design/x/clipboard"

	"github.com/skiffvpn/skiff/app/qr"
)

// fakeClipboard is an imageClipboard that holds b, or fails with err.
type fakeClipboard struct {
	b   []byte
	err error
}

func (c fakeClipboard) PNG(context.Context) ([]byte, error) { return c.b, c.err }

// pngOf encodes img, or fails t.
func pngOf(t *testing.T, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// paste presses Paste in h's window and returns what it says.
func paste(h *harness) string {
	v := h.ui.profiles
	v.status.Hide()
	v.addFromClipboard()
	h.waitFor("the paste", func() bool { return !v.paste.Disabled() && v.status.Visible() })
	return v.status.Text
}

// TestPasteQRCode: Paste imports the QR code of an image on the clipboard
// as a QR file's is imported, else the text on it, and says why when it
// cannot.
func TestPasteQRCode(t *testing.T) {
	code, err := qr.PNG(vlessLink, 256)
	if err != nil {
		t.Fatal(err)
	}
	blank := pngOf(t, image.NewGray(image.Rect(0, 0, 64, 64)))
	wide := pngOf(t, image.NewGray(image.Rect(0, 0, qr.MaxSide+1, 1))) // a few bytes, too many pixels
	huge := append(bytes.Clone(code), make([]byte, qr.MaxFileSize)...)
	noDisplay := fmt.Errorf("%w: no X11 display", errNoClipboard)
	for _, c := range []struct {
		name  string
		clip  fakeClipboard
		text  string // on Fyne's (text) clipboard
		want  string
		nodes int
	}{
		{"QR code", fakeClipboard{b: code}, "", "Imported 1 node from the QR code on the clipboard", 1},
		{"QR code and text", fakeClipboard{b: code}, "not a link", "Imported 1 node from the QR code on the clipboard", 1},
		{"text", fakeClipboard{}, vlessLink, "Imported 1 node from the clipboard.", 1},
		{"nothing", fakeClipboard{}, "", "The clipboard holds no text, and no image", 0},
		{"no QR code", fakeClipboard{b: blank}, "", "No link read from the image on the clipboard: no QR code was found", 0},
		{"no QR code, a link beside it", fakeClipboard{b: blank}, vlessLink, "Imported 1 node from the clipboard.", 1},
		{"not an image", fakeClipboard{b: code[:len(code)/3]}, "", "No link read from the image on the clipboard: it is not a PNG", 0},
		{"too many bytes", fakeClipboard{b: huge}, "", "the image is too large", 0},
		{"too many pixels", fakeClipboard{b: wide}, "", "the image is too large", 0},
		{"too many bytes to read", fakeClipboard{err: errClipTooBig}, vlessLink, "the image is too large", 0},
		{"no display, text", fakeClipboard{err: noDisplay}, vlessLink, "Imported 1 node from the clipboard.", 1},
		{"no display, nothing", fakeClipboard{err: noDisplay}, "", "its images cannot be read here", 0},
		{"no answer", fakeClipboard{err: context.DeadlineExceeded}, vlessLink, "did not answer in time", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Prefs{}, nil)
			h.ui.clip = c.clip
			h.ui.fa.Clipboard().SetContent(c.text)
			if got := paste(h); !strings.Contains(got, c.want) {
				t.Errorf("says %q, want %q", got, c.want)
			}
			if n := len(h.ui.profiles.Shown()); n != c.nodes {
				t.Errorf("%d nodes, want %d", n, c.nodes)
			}
		})
	}
}

// clipboardHelper, set, makes this test binary a clipboard helper
// (TestMain): "own:FILE" puts FILE's PNG on the clipboard and keeps it
// there until its standard input closes; "read" reads the clipboard's
// image through sysClipboard and prints what came.
const clipboardHelper = "SKIFF_TEST_CLIPBOARD"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(clipboardHelper); ok {
		os.Exit(runClipboardHelper(mode))
	}
	os.Exit(m.Run())
}

func runClipboardHelper(mode string) int {
	if file, ok := strings.CutPrefix(mode, "own:"); ok {
		b, err := os.ReadFile(file)
		if err == nil {
			err = clipboard.Init()
		}
		if err != nil {
			fmt.Println(err)
			return 1
		}
		if clipboard.Write(clipboard.FmtImage, b) == nil {
			fmt.Println("write failed")
			return 1
		}
		fmt.Println("owning")
		io.Copy(io.Discard, os.Stdin)
		return 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), clipboardWait)
	defer cancel()
	b, err := (&sysClipboard{}).PNG(ctx)
	fmt.Printf("%d bytes, err %v\n", len(b), err)
	return 0
}

// helper starts this test binary as a clipboard helper on display.
func helper(t *testing.T, mode, display string) (*exec.Cmd, io.WriteCloser, *bufio.Reader) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), clipboardHelper+"="+mode, "DISPLAY="+display)
	cmd.Stderr = os.Stderr
	in, ierr := cmd.StdinPipe()
	out, oerr := cmd.StdoutPipe()
	if err := errors.Join(ierr, oerr); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, in, bufio.NewReader(out)
}

// TestSysClipboardNoDisplay: without an X display the clipboard's image
// cannot be read, and a read says so (errNoClipboard) instead of crashing
// (after a failed Init, golang.design/x/clipboard's reads may panic).
// In a process of its own: the package keeps its first Init's outcome.
func TestSysClipboardNoDisplay(t *testing.T) {
	cmd, in, out := helper(t, "read", "")
	in.Close()
	b, _ := io.ReadAll(out)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the read without a display: %v (%s)", err, b)
	}
	if !strings.Contains(string(b), errNoClipboard.Error()) {
		t.Errorf("the read without a display says %q, want %q", b, errNoClipboard)
	}
}

// startXvfb starts Xvfb on a display number it picks (-displayfd) and
// returns the display's name; the test's end stops it. -noreset: the
// server keeps its atoms when the last client leaves.
func startXvfb(t *testing.T) string {
	t.Helper()
	xvfb, err := exec.LookPath("Xvfb")
	if err != nil {
		t.Skip("Xvfb is not installed (make deps installs it)")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(xvfb, "-displayfd", "3", "-screen", "0", "320x240x24", "-nolisten", "tcp", "-noreset")
	cmd.ExtraFiles = []*os.File{w}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	n := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		n <- strings.TrimSpace(line)
	}()
	select {
	case d := <-n:
		if d == "" {
			t.Fatal("Xvfb named no display")
		}
		return ":" + d
	case <-time.After(10 * time.Second):
		t.Fatal("Xvfb did not come up in 10 s")
	}
	return ""
}

// TestSysClipboardUnderXvfb: a PNG that another program (a helper
// process) put on a real X clipboard reads back through sysClipboard
// byte for byte, and Paste imports its QR code.
func TestSysClipboardUnderXvfb(t *testing.T) {
	display := startXvfb(t)
	file := writeQR(t, vlessLink)
	code, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	owner, in, out := helper(t, "own:"+file, display)
	// Stopped before Xvfb (cleanups run last first): an X client whose
	// server goes away is ended by Xlib.
	t.Cleanup(func() { in.Close(); owner.Wait() })
	if line, err := out.ReadString('\n'); line != "owning\n" {
		t.Fatalf("the clipboard's owner says %q, %v", line, err)
	}

	t.Setenv("DISPLAY", display)
	c := &sysClipboard{}
	ctx, cancel := context.WithTimeout(context.Background(), clipboardWait)
	defer cancel()
	got, err := c.PNG(ctx)
	if err != nil || !bytes.Equal(got, code) {
		t.Fatalf("read %d bytes, %v; want the %d written", len(got), err, len(code))
	}

	h := newHarness(t, Prefs{}, nil)
	h.ui.clip = c
	if s := paste(h); !strings.Contains(s, "Imported 1 node from the QR code on the clipboard") {
		t.Errorf("Paste says %q", s)
	}
}

// TestSysClipboardInParts: an image that xclip, as GTK does above
// 256 KiB, hands over in parts (INCR) reads back whole; one over
// qr.MaxFileSize is refused, and an empty clipboard holds no image.
func TestSysClipboardInParts(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "darwin" {
		t.Skip("X11 only")
	}
	xclip, err := exec.LookPath("xclip")
	if err != nil {
		t.Skip("xclip is not installed (make deps installs it)")
	}
	display := startXvfb(t)
	t.Setenv("DISPLAY", display)
	read := func() ([]byte, error) {
		ctx, cancel := context.WithTimeout(context.Background(), clipboardWait)
		defer cancel()
		return newSysClipboard().PNG(ctx)
	}
	if b, err := read(); b != nil || err != nil {
		t.Fatalf("an empty clipboard: %d bytes, %v; want no image", len(b), err)
	}
	for _, tc := range []struct {
		name string
		size int
		want error
	}{
		{"6 MiB in parts", 6 << 20, nil},
		{"over the limit", qr.MaxFileSize + 1<<20, errClipTooBig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, tc.size)
			for i := range data {
				data[i] = byte(rand.Uint32())
			}
			file := filepath.Join(t.TempDir(), "big.png")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			owner := exec.Command(xclip, "-quiet", "-selection", "clipboard", "-t", "image/png", "-i", file)
			owner.Env = append(os.Environ(), "DISPLAY="+display)
			if err := owner.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { owner.Process.Kill(); owner.Wait() })
			var got []byte
			var err error
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if got, err = read(); got != nil || err != nil {
					break // xclip owns the clipboard
				}
			}
			if !errors.Is(err, tc.want) {
				t.Fatalf("read %d bytes, %v; want %v", len(got), err, tc.want)
			}
			if tc.want == nil && !bytes.Equal(got, data) {
				t.Fatalf("read %d bytes, not the %d xclip was given", len(got), len(data))
			}
		})
	}
}
