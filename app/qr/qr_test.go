package qr

import (
	"bytes"
	"errors"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

var links = []struct{ name, link string }{
	{"vless", "vless://6f4d0a5e-3c2b-4a1d-9e8f-0123456789ab@example.com:443?encryption=none&security=reality&sni=www.microsoft.com&fp=chrome&pbk=Gd2b5SbcGcN1s7w2vFQp1sYk3mWm1n7gK6gq0xX3YkE&sid=6ba85179e30d4fc2&type=tcp&flow=xtls-rprx-vision#%E9%A6%99%E6%B8%AF%2001"},
	{"ss", "ss://MjAyMi1ibGFrZTMtYWVzLTI1Ni1nY206WXpGa1pqWTBPV1ZsWVRsbE5tWmpNR0k0TmpReE5UYzRPVFl4T0dRNU5EQT0@1.2.3.4:8388#ss%20node"},
	{"hysteria2", "hysteria2://letmein@hy.example.net:8443/?sni=hy.example.net&obfs=salamander&obfs-password=cry_me_a_r1ver&insecure=0#Hy2%20%F0%9F%87%AF%F0%9F%87%B5"},
}

// TestRoundTrip: a link drawn by the encoder reads back the same, from PNG
// and from JPEG (lossy), at the sizes the window shows.
func TestRoundTrip(t *testing.T) {
	for _, tc := range links {
		for _, side := range []int{256, 512} {
			b, err := PNG(tc.link, side)
			if err != nil {
				t.Fatalf("%s: PNG: %v", tc.name, err)
			}
			got, err := DecodeBytes(b)
			if err != nil {
				t.Fatalf("%s %d px: decode PNG: %v", tc.name, side, err)
			}
			if got != tc.link {
				t.Errorf("%s %d px: PNG read %q, want %q", tc.name, side, got, tc.link)
			}
			img, err := Image(tc.link, side)
			if err != nil {
				t.Fatal(err)
			}
			var jb bytes.Buffer
			if err := jpeg.Encode(&jb, img, &jpeg.Options{Quality: 75}); err != nil {
				t.Fatal(err)
			}
			got, err = Decode(&jb)
			if err != nil {
				t.Fatalf("%s %d px: decode JPEG: %v", tc.name, side, err)
			}
			if got != tc.link {
				t.Errorf("%s %d px: JPEG read %q, want %q", tc.name, side, got, tc.link)
			}
		}
	}
}

// TestInScreenshot: the code need not fill the image; a screenshot with the
// code in a corner on grey reads too.
func TestInScreenshot(t *testing.T) {
	code, err := Image(links[0].link, 300)
	if err != nil {
		t.Fatal(err)
	}
	shot := image.NewRGBA(image.Rect(0, 0, 1280, 800))
	for y := 0; y < 800; y++ {
		for x := 0; x < 1280; x++ {
			shot.Set(x, y, color.Gray{Y: 200})
		}
	}
	for y := 0; y < 300; y++ {
		for x := 0; x < 300; x++ {
			shot.Set(900+x, 450+y, code.At(x, y))
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, shot); err != nil {
		t.Fatal(err)
	}
	got, err := Decode(&b)
	if err != nil || got != links[0].link {
		t.Fatalf("screenshot: %q, %v", got, err)
	}
}

// hugePNG is a valid PNG header (IHDR) claiming w×h pixels, with no pixels.
func hugePNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, image.NewGray(image.Rect(0, 0, 1, 1))); err != nil {
		t.Fatal(err)
	}
	p := b.Bytes()
	// IHDR data starts at 16: width, height big-endian; then fix its CRC.
	put := func(i, v int) { p[i], p[i+1], p[i+2], p[i+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v) }
	put(16, w)
	put(20, h)
	put(29, int(crc(p[12:29])))
	return p
}

func crc(b []byte) uint32 {
	c := ^uint32(0)
	for _, x := range b {
		c ^= uint32(x)
		for k := 0; k < 8; k++ {
			if c&1 != 0 {
				c = c>>1 ^ 0xedb88320
			} else {
				c >>= 1
			}
		}
	}
	return ^c
}

func TestRefused(t *testing.T) {
	noCode := func() []byte {
		var b bytes.Buffer
		img := image.NewGray(image.Rect(0, 0, 200, 200))
		for i := range img.Pix {
			img.Pix[i] = 255
		}
		png.Encode(&b, img)
		return b.Bytes()
	}()
	good, _ := PNG(links[1].link, 256)
	for _, tc := range []struct {
		name string
		in   []byte
		want error
	}{
		{"20000x20000 PNG", hugePNG(t, 20000, 20000), ErrTooLarge},
		{"9000x10 PNG", hugePNG(t, 9000, 10), ErrTooLarge},
		{"7000x7000 PNG", hugePNG(t, 7000, 7000), ErrTooLarge},
		{"text", []byte("vless://not-an-image"), ErrNotImage},
		{"empty", nil, ErrNotImage},
		{"truncated PNG", good[:len(good)/2], ErrNotImage},
		{"white square", noCode, ErrNoQRCode},
		{"over 16 MiB", append(append([]byte{}, good...), make([]byte, MaxFileSize)...), ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(bytes.NewReader(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestEncodeRefused(t *testing.T) {
	if _, err := PNG("", 256); !errors.Is(err, ErrEmptyText) {
		t.Errorf("empty: %v", err)
	}
	if _, err := PNG(string(make([]byte, MaxText+1)), 256); err == nil {
		t.Error("too long: no error")
	}
}

func FuzzDecode(f *testing.F) {
	good, _ := PNG(links[0].link, 128)
	f.Add(good)
	f.Add(hugePNG(f, 20000, 20000))
	f.Add([]byte("GIF89a"))
	f.Add([]byte{0xff, 0xd8, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := DecodeBytes(b)
		if err == nil && s == "" {
			t.Fatal("no error and no text")
		}
	})
}
