package tlsconf

import (
	"bytes"
	"crypto/tls"
	"reflect"
	"time"
	"unsafe"

	utls "github.com/refraction-networking/utls"
)

// What an idle TLS connection keeps. crypto/tls writes each record from a
// pooled buffer (outBuf, since Go 1.21), but it reads every record into a
// buffer of its own, rawInput, which grows to hold the largest record seen
// (16 KiB plus framing; bytes.Buffer's doubling makes it 20-37 KiB) and is
// kept for the connection's life, with input, the reader of the last
// record's plaintext, pointing into it. After a transfer, 500 idle VLESS
// connections held 18.6 MiB this way. The package offers no way to drop it.
//
// Conn drops it while the connection is quiet: a Read that finds nothing
// buffered in crypto/tls waits for the socket to become readable without
// reading (a peek), and when that wait lasts idleRelease, rawInput and
// input are replaced by empty ones, so that the memory goes to the
// collector; the next record grows a new buffer. The fields are private, so
// this reaches them through their offsets, found by name and type when the
// package loads (for crypto/tls and for uTLS, a fork with the same fields); if a Go release renames or retypes them, releasing is off
// (TestIdleRelease fails, so that it is noticed) and Conn works as before.
// Only the reading goroutine touches them, between crypto/tls calls: Read
// and TryRead are not concurrent (see TryRead), writes never use them, and
// the timer that drops them runs only while the reader is parked in the
// wait, under idleMu.

// idleRelease is how long a Read waits with nothing buffered before the
// record buffer is dropped. Shorter would free it between the records of a
// transfer that the network paces, and make the collector pay for a new
// one each time.
const idleRelease = time.Second

// recordFields are the offsets of rawInput and input in a TLS connection
// struct; ok is false when they were not found as expected. uTLS is a fork
// of crypto/tls and has both under the same names.
type recordFields struct {
	rawInput, input uintptr
	ok              bool
}

func fieldsOf(t reflect.Type) (f recordFields) {
	ri, ok1 := t.FieldByName("rawInput")
	in, ok2 := t.FieldByName("input")
	if ok1 && ok2 && ri.Type == reflect.TypeFor[bytes.Buffer]() && in.Type == reflect.TypeFor[bytes.Reader]() {
		f.rawInput, f.input, f.ok = ri.Offset, in.Offset, true
	}
	return f
}

var (
	tlsFields  = fieldsOf(reflect.TypeFor[tls.Conn]())
	utlsFields = fieldsOf(reflect.TypeFor[utls.Conn]())
)

// records points at one connection's rawInput and input; both nil when
// the engine's fields were not found (then nothing is released).
type records struct {
	raw *bytes.Buffer
	in  *bytes.Reader
}

func recordsAt(p unsafe.Pointer, f recordFields) records {
	if !f.ok || p == nil {
		return records{}
	}
	return records{raw: (*bytes.Buffer)(unsafe.Add(p, f.rawInput)), in: (*bytes.Reader)(unsafe.Add(p, f.input))}
}

func stdRecords(c *tls.Conn) records { return recordsAt(unsafe.Pointer(c), tlsFields) }

func utlsRecords(c *utls.Conn) records { return recordsAt(unsafe.Pointer(c), utlsFields) }

func (r records) ok() bool { return r.raw != nil }

// buffered reports whether the engine holds plaintext or record bytes.
func (r records) buffered() bool {
	return r.raw.Len() > 0 || r.in.Len() > 0
}

// waitQuiet runs before a Read: when crypto/tls holds nothing and the
// socket has nothing, it waits until the socket has something, dropping
// the record buffer if that takes idleRelease. Only after the handshake
// (c.handshook), on a socket that can wait, and not once the engine has
// ended (c.ended): its next Read returns at once.
func (c *Conn) waitQuiet() {
	if c.ended || !c.rec.ok() || !c.sock.nb.canWait() || c.rec.buffered() || c.sock.nb.ready() {
		return
	}
	c.idleMu.Lock()
	c.waiting = true
	if c.idleTimer == nil {
		c.idleTimer = time.AfterFunc(idleRelease, c.release)
	} else {
		c.idleTimer.Reset(idleRelease)
	}
	c.idleMu.Unlock()
	c.sock.nb.wait()
	c.idleMu.Lock()
	c.waiting = false
	c.idleTimer.Stop()
	c.idleMu.Unlock()
}

// release drops the record buffer if the reader is still waiting with
// nothing buffered.
func (c *Conn) release() {
	c.idleMu.Lock()
	defer c.idleMu.Unlock()
	if c.waiting && !c.rec.buffered() {
		*c.rec.raw = bytes.Buffer{}
		*c.rec.in = bytes.Reader{}
		c.dropBig()
		c.released.Add(1)
	}
}

// WaitRead waits as Read does before it reads (waitQuiet), for a caller
// that takes its read buffer only once data is there: a relay parks its
// idle direction here holding nothing. It implements readwait.Waiter; it
// cannot wait (false) before the handshake is done or where Read would not
// wait either.
func (c *Conn) WaitRead() bool {
	if !c.handshook || !c.rec.ok() || !c.sock.nb.canWait() {
		return false
	}
	c.waitQuiet()
	c.waited = true
	return true
}
