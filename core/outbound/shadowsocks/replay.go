package shadowsocks

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"time"

	"lukechampine.com/blake3"
)

// saltWindow is how long a response salt is remembered: twice the
// timestamp tolerance, so that a replay inside the tolerance is always
// caught (SIP022 asks for at least 60 s).
const saltWindow = 2 * maxTimeSkew * time.Second

// saltFilter remembers the salts a client's servers answered with, so that
// a recorded response replayed to a later connection is refused. It is a
// plain map with expiry: a client sees few enough responses per minute.
type saltFilter struct {
	mu    sync.Mutex
	seen  map[[32]byte]time.Time
	prune time.Time // next sweep of expired entries
}

// add records salt and reports whether it was new.
func (f *saltFilter) add(salt []byte, now time.Time) bool {
	var k [32]byte
	copy(k[:], salt)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen == nil {
		f.seen = map[[32]byte]time.Time{}
	}
	if now.After(f.prune) {
		for s, t := range f.seen {
			if now.Sub(t) > saltWindow {
				delete(f.seen, s)
			}
		}
		f.prune = now.Add(saltWindow / 4)
	}
	if t, ok := f.seen[k]; ok && now.Sub(t) <= saltWindow {
		return false
	}
	f.seen[k] = now
	return true
}

// packetWindow is the sliding-window replay check of a 2022 UDP session's
// packet ids (as in RFC 6479, with one 64-bit word per 64 ids).
type packetWindow struct {
	last uint64
	bits [packetWindowWords]uint64
}

const (
	packetWindowWords = 16
	packetWindowSize  = (packetWindowWords - 1) * 64
)

// check reports whether id is new and inside the window, and records it.
func (w *packetWindow) check(id uint64) bool {
	if id+packetWindowSize < w.last {
		return false // too old
	}
	if id > w.last {
		cur, next := w.last/64, id/64
		for i := cur + 1; i <= next && i-cur <= packetWindowWords; i++ {
			w.bits[i%packetWindowWords] = 0
		}
		w.last = id
	}
	word, bit := &w.bits[(id/64)%packetWindowWords], uint64(1)<<(id%64)
	if *word&bit != 0 {
		return false
	}
	*word |= bit
	return true
}

func randInt(n int) int {
	var b [4]byte
	rand.Read(b[:])
	return int(binary.LittleEndian.Uint32(b[:]) % uint32(n))
}

func deriveKey(out []byte, ctx string, material []byte) { blake3.DeriveKey(out, ctx, material) }

func newBlock(key []byte) (cipher.Block, error) { return aes.NewCipher(key) }
