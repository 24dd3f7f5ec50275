// Package icons renders the application icon (assets/icon.png, 256×256) in
// the sizes each platform's packaging wants: the freedesktop hicolor theme's
// PNGs for the Linux packages and a multi-size .ico for the Windows
// executable's resource. Rendering at build time keeps one source image in
// the repository.
package icons

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"

	"golang.org/x/image/draw"
)

// Hicolor is the sizes installed under /usr/share/icons/hicolor (the
// scalable SVG goes beside them).
var Hicolor = []int{16, 22, 24, 32, 48, 64, 128, 256}

// Windows is the sizes in the executable's .ico: the shell picks 16 to 48
// for lists and menus, 256 for large tiles.
var Windows = []int{16, 24, 32, 48, 64, 128, 256}

// Rendered is one size of the icon as PNG bytes.
type Rendered struct {
	Size int
	PNG  []byte
}

// RenderRepo reads assets/icon.png of the repository at repo and renders
// it in sizes.
func RenderRepo(repo string, sizes []int) ([]Rendered, error) {
	src, err := os.ReadFile(filepath.Join(repo, "assets", "icon.png"))
	if err != nil {
		return nil, err
	}
	return Render(src, sizes)
}

// Render decodes the source PNG and scales it to each size (Catmull-Rom,
// so that small sizes stay sharp).
func Render(src []byte, sizes []int) ([]Rendered, error) {
	img, err := png.Decode(bytes.NewReader(src))
	if err != nil {
		return nil, fmt.Errorf("icons: decode source: %w", err)
	}
	b := img.Bounds()
	if b.Dx() != b.Dy() {
		return nil, fmt.Errorf("icons: source is %dx%d, want a square", b.Dx(), b.Dy())
	}
	out := make([]Rendered, 0, len(sizes))
	for _, s := range sizes {
		if s <= 0 || s > 256 {
			return nil, fmt.Errorf("icons: size %d out of range 1..256", s)
		}
		if s > b.Dx() {
			return nil, fmt.Errorf("icons: size %d is larger than the %dpx source", s, b.Dx())
		}
		dst := image.NewNRGBA(image.Rect(0, 0, s, s))
		draw.CatmullRom.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
		var buf bytes.Buffer
		if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, dst); err != nil {
			return nil, fmt.Errorf("icons: encode %dpx: %w", s, err)
		}
		out = append(out, Rendered{Size: s, PNG: buf.Bytes()})
	}
	return out, nil
}

// ICO packs rendered PNGs into a Windows icon file (PNG-compressed entries,
// which Windows reads since Vista).
func ICO(imgs []Rendered) ([]byte, error) {
	if len(imgs) == 0 || len(imgs) > 0xffff {
		return nil, fmt.Errorf("icons: ico needs 1 to 65535 images, have %d", len(imgs))
	}
	var buf bytes.Buffer
	le := binary.LittleEndian
	hdr := make([]byte, 6, 6+16*len(imgs))
	le.PutUint16(hdr[2:], 1) // type: icon
	le.PutUint16(hdr[4:], uint16(len(imgs)))
	offset := uint32(len(hdr) + 16*len(imgs))
	for _, im := range imgs {
		if im.Size < 1 || im.Size > 256 {
			return nil, fmt.Errorf("icons: ico entry of %dpx", im.Size)
		}
		e := make([]byte, 16)
		e[0] = byte(im.Size % 256) // 0 means 256
		e[1] = byte(im.Size % 256)
		le.PutUint16(e[4:], 1)  // planes
		le.PutUint16(e[6:], 32) // bits per pixel
		le.PutUint32(e[8:], uint32(len(im.PNG)))
		le.PutUint32(e[12:], offset)
		offset += uint32(len(im.PNG))
		hdr = append(hdr, e...)
	}
	buf.Write(hdr)
	for _, im := range imgs {
		buf.Write(im.PNG)
	}
	return buf.Bytes(), nil
}
