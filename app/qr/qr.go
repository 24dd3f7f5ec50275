// Package qr encodes share links as QR code images and reads them back from
// image files (PNG, JPEG, GIF). It has no GUI: the window and tests use it.
//
// Decoding is bounded: a file larger than MaxFileSize or an image with more
// than MaxPixels is refused from its header, before any pixel is decoded,
// so a hostile 20000×20000 PNG costs a few bytes of reading, not 1.6 GB.
package qr

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	_ "image/gif"  // decoder registration
	_ "image/jpeg" // decoder registration
	_ "image/png"  // decoder registration
	"io"

	"github.com/makiuchi-d/gozxing"
	zxqr "github.com/makiuchi-d/gozxing/qrcode"
	qrcode "github.com/skip2/go-qrcode"
)

const (
	// MaxFileSize bounds the bytes read: a phone screenshot PNG is 1–4 MB.
	MaxFileSize = 16 << 20
	// MaxSide and MaxPixels bound the image decoded. A 4K screenshot is
	// 3840×2160 (8.3 Mpx, 33 MB as RGBA); 6000×6000 allows tall phone shots
	// and stays at 144 MB of RGBA at worst.
	MaxSide   = 8192
	MaxPixels = 36_000_000
	// MaxText is the longest text encoded: a QR code (version 40, level M)
	// holds 2331 bytes; a share link is 100–600.
	MaxText = 2331
)

// Errors a caller can tell apart (errors.Is).
var (
	ErrTooLarge  = errors.New("image too large")
	ErrNotImage  = errors.New("not a PNG, JPEG or GIF image")
	ErrNoQRCode  = errors.New("no QR code found in the image")
	ErrEmptyText = errors.New("QR code holds no text")
)

// Decode reads the text of the QR code in the image r holds.
func Decode(r io.Reader) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return "", fmt.Errorf("qr: read image: %w", err)
	}
	if len(b) > MaxFileSize {
		return "", fmt.Errorf("qr: %w: more than %d MiB", ErrTooLarge, MaxFileSize>>20)
	}
	return DecodeBytes(b)
}

// DecodeBytes is Decode of an image already read.
func DecodeBytes(b []byte) (string, error) {
	cfg, _, err := image.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		return "", fmt.Errorf("qr: %w: %v", ErrNotImage, err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 || cfg.Width > MaxSide || cfg.Height > MaxSide || cfg.Width*cfg.Height > MaxPixels {
		return "", fmt.Errorf("qr: %w: %d×%d pixels (at most %d×%d, %d Mpx)", ErrTooLarge, cfg.Width, cfg.Height, MaxSide, MaxSide, MaxPixels/1_000_000)
	}
	img, _, err := image.Decode(bytes.NewReader(b))
	if err != nil {
		return "", fmt.Errorf("qr: %w: %v", ErrNotImage, err)
	}
	return DecodeImage(img)
}

// DecodeImage reads the text of the QR code in img.
func DecodeImage(img image.Image) (string, error) {
	if s := img.Bounds().Size(); s.X <= 0 || s.Y <= 0 || s.X > MaxSide || s.Y > MaxSide || s.X*s.Y > MaxPixels {
		return "", fmt.Errorf("qr: %w: %d×%d pixels", ErrTooLarge, s.X, s.Y)
	}
	bmp, err := gozxing.NewBinaryBitmapFromImage(img)
	if err != nil {
		return "", fmt.Errorf("qr: %w: %v", ErrNoQRCode, err)
	}
	hints := map[gozxing.DecodeHintType]interface{}{gozxing.DecodeHintType_TRY_HARDER: true}
	res, err := zxqr.NewQRCodeReader().Decode(bmp, hints)
	if err != nil {
		return "", fmt.Errorf("qr: %w", ErrNoQRCode)
	}
	if res.GetText() == "" {
		return "", fmt.Errorf("qr: %w", ErrEmptyText)
	}
	return res.GetText(), nil
}

// Image draws text as a QR code of side pixels (medium error correction:
// 15 % of the code can be lost, as on a screen photographed at an angle).
func Image(text string, side int) (image.Image, error) {
	if text == "" {
		return nil, fmt.Errorf("qr: %w", ErrEmptyText)
	}
	if len(text) > MaxText {
		return nil, fmt.Errorf("qr: text of %d bytes is longer than a QR code holds (%d)", len(text), MaxText)
	}
	q, err := qrcode.New(text, qrcode.Medium)
	if err != nil {
		return nil, fmt.Errorf("qr: encode: %w", err)
	}
	return q.Image(side), nil
}

// PNG is Image encoded as a PNG file.
func PNG(text string, side int) ([]byte, error) {
	if text == "" {
		return nil, fmt.Errorf("qr: %w", ErrEmptyText)
	}
	if len(text) > MaxText {
		return nil, fmt.Errorf("qr: text of %d bytes is longer than a QR code holds (%d)", len(text), MaxText)
	}
	b, err := qrcode.Encode(text, qrcode.Medium, side)
	if err != nil {
		return nil, fmt.Errorf("qr: encode: %w", err)
	}
	return b, nil
}
