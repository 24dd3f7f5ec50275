package ws

import (
	"bytes"
	"testing"

	"github.com/gobwas/ws"
)

// TestMaskCopy checks maskCopy against gobwas's ws.Cipher for every mask
// offset and lengths around its 32- and 8-byte steps.
func TestMaskCopy(t *testing.T) {
	mask := [4]byte{0x12, 0x34, 0x56, 0x78}
	src := pattern(70000)
	for _, n := range []int{0, 1, 3, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 1000, 16384, 61440, 70000} {
		for off := range 8 {
			want := append([]byte(nil), src[:n]...)
			ws.Cipher(want, mask, off)
			got := make([]byte, n+5)
			maskCopy(got, src[:n], mask, off)
			if !bytes.Equal(got[:n], want) {
				t.Fatalf("n=%d off=%d: differs from ws.Cipher", n, off)
			}
			if !bytes.Equal(got[n:], make([]byte, 5)) {
				t.Fatalf("n=%d off=%d: wrote past len(src)", n, off)
			}
		}
	}
}

// BenchmarkMask compares masking a 60 KiB chunk into the frame buffer in
// one pass (maskCopy) with copy plus ws.Cipher in place.
func BenchmarkMask(b *testing.B) {
	src, dst := pattern(60<<10), make([]byte, 60<<10)
	mask := [4]byte{1, 2, 3, 4}
	b.Run("maskCopy", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			maskCopy(dst, src, mask, 0)
		}
	})
	b.Run("copy+Cipher", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			copy(dst, src)
			ws.Cipher(dst, mask, 0)
		}
	})
}
