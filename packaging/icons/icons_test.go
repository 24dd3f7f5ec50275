package icons

import (
	"bytes"
	"encoding/binary"
	"image/png"
	"os"
	"testing"
)

func source(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("../../assets/icon.png")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestRenderSizes(t *testing.T) {
	imgs, err := Render(source(t), Hicolor)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != len(Hicolor) {
		t.Fatalf("%d images, want %d", len(imgs), len(Hicolor))
	}
	for i, im := range imgs {
		cfg, err := png.DecodeConfig(bytes.NewReader(im.PNG))
		if err != nil {
			t.Fatalf("%dpx: %v", im.Size, err)
		}
		if im.Size != Hicolor[i] || cfg.Width != im.Size || cfg.Height != im.Size {
			t.Errorf("entry %d: size %d, png %dx%d, want %d", i, im.Size, cfg.Width, cfg.Height, Hicolor[i])
		}
	}
}

func TestRenderRejects(t *testing.T) {
	if _, err := Render([]byte("not a png"), Hicolor); err == nil {
		t.Error("garbage source: no error")
	}
	if _, err := Render(source(t), []int{512}); err == nil {
		t.Error("upscaling past 256: no error")
	}
}

func TestICO(t *testing.T) {
	imgs, err := Render(source(t), Windows)
	if err != nil {
		t.Fatal(err)
	}
	ico, err := ICO(imgs)
	if err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	if le.Uint16(ico[0:]) != 0 || le.Uint16(ico[2:]) != 1 || int(le.Uint16(ico[4:])) != len(imgs) {
		t.Fatalf("header % x", ico[:6])
	}
	for i, im := range imgs {
		e := ico[6+16*i:]
		w, size, off := int(e[0]), le.Uint32(e[8:]), le.Uint32(e[12:])
		if w == 0 {
			w = 256
		}
		if w != im.Size || int(size) != len(im.PNG) || !bytes.Equal(ico[off:off+size], im.PNG) {
			t.Errorf("entry %d: width %d size %d offset %d do not point at the %dpx PNG", i, w, size, off, im.Size)
		}
	}
	if _, err := ICO(nil); err == nil {
		t.Error("empty ico: no error")
	}
}
