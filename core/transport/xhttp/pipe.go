package xhttp

import (
	"os"
	"sync"
	"time"
)

// pipe is a bounded byte buffer between one writer and one reader, with
// a deadline on each end: the upload between Conn.Write and the request
// bodies, and the download between the response body and Conn.Read.
type pipe struct {
	mu    sync.Mutex
	buf   []byte
	off   int   // buf[off:] is unread
	limit int   // Write blocks while len(buf)-off >= limit
	err   error // set by close: reads drain, then return it; writes return it
	rd    deadline
	wd    deadline
	canRd chan struct{} // cap 1: data or err arrived
	canWr chan struct{} // cap 1: room or err arrived
}

func newPipe(limit int) *pipe {
	return &pipe{limit: limit, canRd: make(chan struct{}, 1), canWr: make(chan struct{}, 1)}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// Read reads what is buffered, waiting for some.
func (p *pipe) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		p.mu.Lock()
		if p.off < len(p.buf) {
			n := copy(b, p.buf[p.off:])
			p.off += n
			if p.off == len(p.buf) {
				p.drained()
			}
			p.mu.Unlock()
			signal(p.canWr)
			return n, nil
		}
		err := p.err
		p.mu.Unlock()
		if err != nil {
			return 0, err
		}
		select {
		case <-p.canRd:
		case <-p.rd.wait():
			return 0, os.ErrDeadlineExceeded
		}
	}
}

// take waits for buffered bytes and returns a copy of at most max of them.
func (p *pipe) take(max int) ([]byte, error) {
	for {
		p.mu.Lock()
		if n := min(len(p.buf)-p.off, max); n > 0 {
			var out []byte
			if p.off+n == len(p.buf) { // all of it: hand the buffer over
				out, p.buf, p.off = p.buf[p.off:], nil, 0
			} else {
				out = append([]byte(nil), p.buf[p.off:p.off+n]...)
				p.off += n
			}
			p.mu.Unlock()
			signal(p.canWr)
			return out, nil
		}
		err := p.err
		p.mu.Unlock()
		if err != nil {
			return nil, err
		}
		<-p.canRd
	}
}

// Write buffers all of b, waiting for room.
func (p *pipe) Write(b []byte) (int, error) {
	n := 0
	for {
		p.mu.Lock()
		if p.err != nil {
			err := p.err
			p.mu.Unlock()
			return n, err
		}
		if room := p.limit - (len(p.buf) - p.off); room > 0 {
			k := min(room, len(b)-n)
			if p.buf == nil && p.limit > keepCap && k >= bulkWrite {
				// Bulk upload in packet-up: room for a whole POST at once,
				// not regrown by doubling (copies) for each.
				p.buf = make([]byte, 0, p.limit)
			}
			if p.off > 0 && cap(p.buf)-len(p.buf) < k {
				p.buf, p.off = p.buf[:copy(p.buf, p.buf[p.off:])], 0
			}
			p.buf = append(p.buf, b[n:n+k]...)
			n += k
			p.mu.Unlock()
			signal(p.canRd)
			if n == len(b) {
				return n, nil
			}
			continue
		}
		p.mu.Unlock()
		select {
		case <-p.canWr:
		case <-p.wd.wait():
			return n, os.ErrDeadlineExceeded
		}
	}
}

// keepCap is the most buffer a drained pipe keeps: packet-up's upload
// grows to 1 MB, which an idle stream must not hold; a relay's 32 KiB
// writes fit without reallocating.
const keepCap = 64 << 10

// bulkWrite is the write size taken as a bulk transfer (a relay's reads
// are 16-32 KiB; interactive writes are far smaller).
const bulkWrite = 16 << 10

// drained resets the empty buffer, dropping a large one.
func (p *pipe) drained() {
	if cap(p.buf) > keepCap {
		p.buf = nil
	} else {
		p.buf = p.buf[:0]
	}
	p.off = 0
}

// buffered is how many bytes wait to be read.
func (p *pipe) buffered() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.buf) - p.off
}

// close ends the pipe with err: the reader gets what is buffered, then
// err; the writer gets err. The first error stays.
func (p *pipe) close(err error) {
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
	signal(p.canRd)
	signal(p.canWr)
}

// discard drops what is buffered (after a Close nobody reads it).
func (p *pipe) discard() {
	p.mu.Lock()
	p.buf, p.off = nil, 0
	p.mu.Unlock()
}

// deadline is a settable point in time whose wait channel is closed once
// it has passed.
type deadline struct {
	mu    sync.Mutex
	timer *time.Timer
	done  chan struct{}
}

// set arms the deadline at t (zero: never).
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		d.done = nil // the old timer fired or is firing: a fresh channel
	}
	d.timer = nil
	if d.done == nil {
		d.done = make(chan struct{})
	}
	select {
	case <-d.done:
		d.done = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return
	}
	dur := time.Until(t)
	if dur <= 0 {
		close(d.done)
		return
	}
	done := d.done
	d.timer = time.AfterFunc(dur, func() { close(done) })
}

// wait returns a channel closed when the deadline has passed.
func (d *deadline) wait() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.done == nil {
		d.done = make(chan struct{})
	}
	return d.done
}
