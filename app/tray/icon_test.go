package tray

import (
	"bytes"
	"encoding/binary"
	"image/png"
	"testing"

	"github.com/skiffvpn/skiff/assets"
)

// TestPNGICO: the .ico for Windows' tray holds the PNG whole, at the
// offset and size its directory entry says.
func TestPNGICO(t *testing.T) {
	ico := pngICO(assets.TrayOn, 64)
	if binary.LittleEndian.Uint16(ico[2:]) != 1 || binary.LittleEndian.Uint16(ico[4:]) != 1 || ico[6] != 64 {
		t.Fatalf("header % x", ico[:22])
	}
	off, n := binary.LittleEndian.Uint32(ico[18:]), binary.LittleEndian.Uint32(ico[14:])
	img := ico[off : off+n]
	if !bytes.Equal(img, assets.TrayOn) {
		t.Fatal("the image is not the PNG")
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil || cfg.Width != 64 {
		t.Fatalf("PNG %+v %v", cfg, err)
	}
}
