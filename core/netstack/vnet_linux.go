package netstack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/tun"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
)

// virtio-net header (linux/virtio_net.h): the 10 bytes that precede every
// packet on a TUN opened with IFF_VNET_HDR.
const (
	vnetHdrLen         = 10
	vnetHdrFNeedsCsum  = 1
	vnetHdrGSOECN      = 0x80
	maxIovecsPerPacket = 64
)

// vnetWriter writes gVisor's packets straight to a Linux TUN opened with
// IFF_VNET_HDR (as wireguard's CreateTUN does where the kernel allows),
// bypassing the tun.Device's Write: a TCP segment of up to 64 KiB that
// gVisor built for host GSO goes to the kernel as one packet whose virtio
// header asks the kernel to segment it (or, for a local socket, to take it
// whole) and to complete its checksum. One writev(2) per 64 KiB, no copy, no
// checksum over the payload in Go.
type vnetWriter struct {
	rc   syscall.RawConn
	pool sync.Pool // of *vnetWrite
}

// vnetWrite is the per-write scratch: the header and the iovecs, and the
// function handed to RawConn.Write (bound once, so a write does not
// allocate).
type vnetWrite struct {
	hdr [vnetHdrLen]byte
	iov []unix.Iovec
	err error
	fn  func(fd uintptr) bool
}

// newVnetWriter returns a writer for dev when dev is a Linux TUN with
// IFF_VNET_HDR, else nil.
func newVnetWriter(dev tun.Device) *vnetWriter {
	fd, ok := dev.(interface{ File() *os.File })
	if !ok {
		return nil
	}
	f := fd.File()
	if f == nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	var flags uint16
	var cerr error
	if err := rc.Control(func(fd uintptr) {
		ifr, err := unix.NewIfreq("")
		if err != nil {
			cerr = err
			return
		}
		if cerr = unix.IoctlIfreq(int(fd), unix.TUNGETIFF, ifr); cerr == nil {
			flags = ifr.Uint16()
		}
	}); err != nil || cerr != nil {
		return nil
	}
	if flags&unix.IFF_VNET_HDR == 0 {
		return nil
	}
	w := &vnetWriter{rc: rc}
	w.pool.New = func() any {
		s := &vnetWrite{iov: make([]unix.Iovec, 0, 8)}
		s.fn = s.write
		return s
	}
	return w
}

// writePacket writes one packet with its virtio header.
func (w *vnetWriter) writePacket(pkt *stack.PacketBuffer) error {
	s := w.pool.Get().(*vnetWrite)
	defer w.pool.Put(s)
	if err := vnetHeader(&s.hdr, pkt); err != nil {
		return err
	}
	s.iov = append(s.iov[:0], iovec(s.hdr[:]))
	vl, off := pkt.AsViewList()
	for v := vl.Front(); v != nil; v = v.Next() {
		b := v.AsSlice()
		if off >= len(b) {
			off -= len(b)
			continue
		}
		b = b[off:]
		off = 0
		if len(s.iov) == maxIovecsPerPacket {
			return errors.New("netstack: packet in too many pieces")
		}
		s.iov = append(s.iov, iovec(b))
	}
	s.err = nil
	err := w.rc.Write(s.fn)
	clear(s.iov) // drop the references to the packet's memory
	if err != nil {
		return closedErr(err)
	}
	return s.err
}

// vnetHeader fills hdr for pkt: a request to complete the TCP checksum
// when gVisor left it partial, and to segment when the packet carries more
// than one MSS. The fields are in host byte order (a little-endian virtio
// header, as the kernel reads it on the machines Skiff runs on).
func vnetHeader(hdr *[vnetHdrLen]byte, pkt *stack.PacketBuffer) error {
	*hdr = [vnetHdrLen]byte{}
	gso := pkt.GSOOptions
	if gso.Type == stack.GSONone {
		return nil
	}
	if gso.NeedsCsum {
		hdr[0] = vnetHdrFNeedsCsum
		binary.NativeEndian.PutUint16(hdr[6:], uint16(len(pkt.NetworkHeader().Slice()))) // csum_start
		binary.NativeEndian.PutUint16(hdr[8:], gso.CsumOffset)                           // csum_offset
	}
	if pkt.Data().Size() > int(gso.MSS) {
		switch gso.Type {
		case stack.GSOTCPv4:
			hdr[1] = vnetHdrGSOTCPv4
		case stack.GSOTCPv6:
			hdr[1] = vnetHdrGSOTCPv6
		default:
			return fmt.Errorf("netstack: unknown GSO type %v", gso.Type)
		}
		binary.NativeEndian.PutUint16(hdr[2:], uint16(pkt.HeaderSize())) // hdr_len
		binary.NativeEndian.PutUint16(hdr[4:], gso.MSS)                  // gso_size
	}
	return nil
}

// write is the RawConn.Write callback: false asks to wait until the device
// is writable again.
func (s *vnetWrite) write(fd uintptr) bool {
	_, _, errno := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&s.iov[0])), uintptr(len(s.iov)))
	switch errno {
	case 0:
		return true
	case unix.EAGAIN:
		return false
	case unix.EINTR:
		return s.write(fd)
	default:
		s.err = errno
		return true
	}
}

// closedErr marks an error of RawConn.Read or Write as os.ErrClosed: they
// fail only when the file is closed or closing, and say so with an error
// of the poller's ("use of closed file") that is not os.ErrClosed.
func closedErr(err error) error {
	if errors.Is(err, os.ErrClosed) {
		return err
	}
	return fmt.Errorf("%w (%v)", os.ErrClosed, err)
}

func iovec(b []byte) unix.Iovec {
	v := unix.Iovec{Base: &b[0]}
	v.SetLen(len(b))
	return v
}

// vnetReader reads the device's packets whole: the kernel's TCP super-
// packets (up to 64 KiB, GSO requested) go to gVisor as one segment each,
// as gVisor's own GRO would have merged them, instead of being split into
// MTU-sized packets, checksummed and merged again.
type vnetReader struct {
	rc  syscall.RawConn
	hdr [vnetHdrLen]byte
	iov []unix.Iovec
	n   int
	err error
	fn  func(fd uintptr) bool
}

// newReader returns the reader for the writer's device. It limits the
// kernel's offloads to checksums and TCP segmentation (no UDP GSO, which
// would need splitting here).
func (w *vnetWriter) newReader() (*vnetReader, error) {
	var cerr error
	if err := w.rc.Control(func(fd uintptr) {
		cerr = unix.IoctlSetInt(int(fd), unix.TUNSETOFFLOAD, unix.TUN_F_CSUM|unix.TUN_F_TSO4|unix.TUN_F_TSO6)
	}); err != nil {
		return nil, err
	}
	if cerr != nil {
		return nil, fmt.Errorf("netstack: set TUN offloads: %w", cerr)
	}
	r := &vnetReader{rc: w.rc}
	r.fn = r.read
	return r, nil
}

// readPacket reads one packet scattered over bufs (whose lengths add up
// to the largest packet taken) and returns its length and its virtio GSO
// type.
func (r *vnetReader) readPacket(bufs [][]byte) (n int, gsoType uint8, err error) {
	r.iov = append(r.iov[:0], iovec(r.hdr[:]))
	for _, b := range bufs {
		r.iov = append(r.iov, iovec(b))
	}
	r.n, r.err = 0, nil
	err = r.rc.Read(r.fn)
	clear(r.iov) // drop the references to the buffers
	if err != nil {
		return 0, 0, closedErr(err)
	}
	if r.err != nil {
		return 0, 0, r.err
	}
	if r.n < vnetHdrLen {
		return 0, 0, fmt.Errorf("netstack: short read from the device (%d bytes)", r.n)
	}
	return r.n - vnetHdrLen, r.hdr[1] &^ vnetHdrGSOECN, nil
}

func (r *vnetReader) read(fd uintptr) bool {
	for {
		n, _, errno := unix.Syscall(unix.SYS_READV, fd, uintptr(unsafe.Pointer(&r.iov[0])), uintptr(len(r.iov)))
		switch errno {
		case 0:
			r.n = int(n)
			return true
		case unix.EAGAIN:
			return false
		case unix.EINTR:
			continue
		case unix.EBADFD:
			r.err = os.ErrClosed
			return true
		default:
			r.err = errno
			return true
		}
	}
}
