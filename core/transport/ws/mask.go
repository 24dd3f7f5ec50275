package ws

import "encoding/binary"

// maskCopy copies src into dst (which must be at least as long) XORed with
// the WebSocket mask, starting at offset off into the mask: the copy and
// the masking of a client frame in one pass over the payload instead of
// two (copy, then gobwas's in-place ws.Cipher).
func maskCopy(dst, src []byte, mask [4]byte, off int) {
	var k [8]byte
	for j := range k {
		k[j] = mask[(off+j)&3]
	}
	key := binary.LittleEndian.Uint64(k[:])
	n := len(src)
	dst = dst[:n]
	i := 0
	for ; i+32 <= n; i += 32 {
		d, s := dst[i:i+32:i+32], src[i:i+32:i+32]
		binary.LittleEndian.PutUint64(d[0:], binary.LittleEndian.Uint64(s[0:])^key)
		binary.LittleEndian.PutUint64(d[8:], binary.LittleEndian.Uint64(s[8:])^key)
		binary.LittleEndian.PutUint64(d[16:], binary.LittleEndian.Uint64(s[16:])^key)
		binary.LittleEndian.PutUint64(d[24:], binary.LittleEndian.Uint64(s[24:])^key)
	}
	for ; i+8 <= n; i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(src[i:])^key)
	}
	for ; i < n; i++ {
		dst[i] = src[i] ^ k[i&7]
	}
}
