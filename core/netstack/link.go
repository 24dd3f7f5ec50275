package netstack

import (
	"errors"
	"os"
	"sync"

	"golang.zx2c4.com/wireguard/tun"
	"gvisor.dev/gvisor/pkg/buffer"
	"gvisor.dev/gvisor/pkg/tcpip"
	"gvisor.dev/gvisor/pkg/tcpip/header"
	"gvisor.dev/gvisor/pkg/tcpip/stack"
	"gvisor.dev/gvisor/pkg/tcpip/stack/gro"

	"github.com/skiffvpn/skiff/core/guard"
)

// tunOffset is the headroom left at the front of every buffer handed to the
// device. wireguard's Linux TUN with IFF_VNET_HDR needs at least 10 bytes (a
// virtio-net header) there; 16 keeps the IP header aligned.
const tunOffset = 16

// maxSegment is the largest packet the device can hand over or take in one
// buffer: wireguard coalesces TCP segments written in one batch into one
// 64 KiB GSO packet, in place, so write buffers need that much room.
const maxSegment = 65535

// GSO types of a virtio-net header (linux/virtio_net.h), for vnet_linux.go.
const (
	vnetHdrGSONone  = 0
	vnetHdrGSOTCPv4 = 1
	vnetHdrGSOTCPv6 = 4
)

// maxReadFailures is how many device reads in a row may fail before the
// reader gives up on the device.
const maxReadFailures = 100

// outQueueLen bounds the packets waiting for the device. When it is full,
// packets are dropped and TCP backs off, as a NIC's ring would make it.
const outQueueLen = 2048

// linkEndpoint is a gVisor link endpoint over a wireguard tun.Device. It
// moves packets in batches both ways: a reader fills BatchSize buffers per
// read (the device splits the kernel's GSO super-packets into them) and
// hands them to gVisor through GRO, so that the TCP stack sees few large
// segments. A writer goroutine drains the queue gVisor fills: on a Linux TUN
// with a virtio header (vnet_linux.go) it writes each packet itself, TCP as
// 64 KiB host-GSO segments; on other devices it hands the device batches,
// which the device may coalesce into GSO packets for the kernel.
type linkEndpoint struct {
	dev   tun.Device
	mtu   uint32
	batch int

	mu         sync.RWMutex
	dispatcher stack.NetworkDispatcher

	out     chan *stack.PacketBuffer
	done    chan struct{}
	closeMu sync.Once
	wg      sync.WaitGroup

	// vnet, when the device is a Linux TUN with a virtio header, writes
	// the queued packets instead of the device's Write: TCP in 64 KiB
	// host-GSO segments, without copies or write buffers.
	vnet *vnetWriter

	// onError reports the error that stopped the reader or writer.
	onError func(error)
	restore func() // puts routes back before a panic in a loop ends the process; may be nil
}

var (
	_ stack.LinkEndpoint = (*linkEndpoint)(nil)
	_ stack.GSOEndpoint  = (*linkEndpoint)(nil)
)

func newLinkEndpoint(dev tun.Device, mtu uint32, onError func(error)) *linkEndpoint {
	b := dev.BatchSize()
	if b < 1 {
		b = 1
	}
	return &linkEndpoint{
		dev:     dev,
		mtu:     mtu,
		batch:   b,
		out:     make(chan *stack.PacketBuffer, outQueueLen),
		done:    make(chan struct{}),
		vnet:    newVnetWriter(dev),
		onError: onError,
	}
}

// The packet loops parse what apps send (gVisor runs the network and
// transport layers on the reader's goroutine): they are no single flow's,
// so a panic there still ends the process, after e.restore (see package
// guard).

// start launches the reader and writer goroutines; close stops them.
func (e *linkEndpoint) start() {
	e.wg.Add(1)
	go e.readLoop()
	if e.vnet == nil {
		e.wg.Add(1)
		go e.writeLoop()
	} else {
		e.wg.Add(1)
		go e.vnetLoop()
	}
}

func (e *linkEndpoint) readLoop() {
	defer e.wg.Done()
	defer guard.Fatal(e.restore)
	if e.vnet != nil {
		r, err := e.vnet.newReader()
		if err == nil {
			e.vnetReadLoop(r)
			return
		}
		// The offloads could not be narrowed: read through the device,
		// which splits everything it gets.
	}
	// The device splits what it reads into packets of at most the MTU.
	bufs := make([][]byte, e.batch)
	for i := range bufs {
		bufs[i] = make([]byte, tunOffset+max(int(e.mtu), 1500))
	}
	sizes := make([]int, e.batch)
	var g gro.GRO
	g.Init(true)
	failures := 0
	for {
		n, err := e.dev.Read(bufs, sizes, tunOffset)
		if err != nil {
			if errors.Is(err, tun.ErrTooManySegments) {
				// The device dropped part of a super-packet; TCP retransmits.
				continue
			}
			if e.readFailed(&failures, err) {
				return
			}
			continue
		}
		failures = 0
		d := e.attached()
		if d == nil {
			continue
		}
		g.Dispatcher = d
		for i := 0; i < n; i++ {
			data := bufs[i][tunOffset : tunOffset+sizes[i]]
			if len(data) == 0 {
				continue
			}
			var proto tcpip.NetworkProtocolNumber
			switch header.IPVersion(data) {
			case header.IPv4Version:
				proto = header.IPv4ProtocolNumber
			case header.IPv6Version:
				proto = header.IPv6ProtocolNumber
			default:
				continue
			}
			pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{
				Payload: buffer.MakeWithData(data),
			})
			pkt.NetworkProtocolNumber = proto
			// The kernel's packets reach us with checksums the device has
			// completed (it finishes CHECKSUM_PARTIAL ones itself).
			pkt.RXChecksumValidated = true
			g.Enqueue(pkt)
			pkt.DecRef()
		}
		g.Flush()
	}
}

// A packet read whole from a virtio-header device is read scattered: its
// first vnetHeadLen bytes (the IP and TCP headers, mostly) into a small
// chunk of their own, the rest into vnetChunk-sized chunks, as many as it
// fills. gVisor keeps a received packet's chunks for as long as the app's
// data waits to be read, and TCP's receive buffer counts payload, not
// chunks: read into one 64 KiB buffer, a 9 KiB or 18 KiB segment (what the
// kernel sends a TUN at a few hundred Mbps per flow) would hold 64 KiB, and
// 16 uploads with full receive buffers held 22 MiB for 8 MiB of data.
// Scattered, a packet holds at most one partly filled chunk, and nothing is
// copied. The headers sit apart because gVisor shares the packet's chunks
// when it delivers it and copies a shared chunk the first time it parses
// headers in it.
const (
	vnetHeadLen = 128
	vnetChunk   = 4 << 10
	// vnetChunks hold any packet, and one byte more: a read that fills
	// head and chunks was cut short.
	vnetChunks = (maxSegment + 1 - vnetHeadLen + vnetChunk - 1) / vnetChunk
)

// vnetCopyBelow is the size under which a packet is copied into one chunk
// of its own size (rounded up to a power of two) rather than kept in the
// head and a 4 KiB chunk: small packets are mostly ACKs and requests.
const vnetCopyBelow = 2 << 10

// vnetReadLoop reads packets whole from a virtio-header device and hands
// them to gVisor. A TCP super-packet becomes one large segment, as GRO
// would have made it; its checksum is the kernel's to vouch for (it left
// it partial: the data never left this machine).
func (e *linkEndpoint) vnetReadLoop(r *vnetReader) {
	// views[0] is the head, views[1:] the chunks; a nil view was handed
	// to gVisor with the last packet and is replaced before the next read.
	views := make([]*buffer.View, 1+vnetChunks)
	bufs := make([][]byte, len(views))
	defer func() {
		for _, v := range views {
			if v != nil {
				v.Release()
			}
		}
	}()
	failures := 0
	for {
		for i, v := range views {
			if v == nil {
				size := vnetChunk
				if i == 0 {
					size = vnetHeadLen
				}
				v = buffer.NewViewSize(size)
				views[i] = v
			}
			bufs[i] = v.AsSlice()
		}
		n, gsoType, err := r.readPacket(bufs)
		if err != nil {
			if e.readFailed(&failures, err) {
				return
			}
			continue
		}
		failures = 0
		d := e.attached()
		if d == nil || n == 0 || n > maxSegment {
			continue
		}
		head := bufs[0][:min(n, vnetHeadLen)]
		proto, ok := superPacket(head, n, gsoType)
		if !ok {
			continue
		}
		var payload buffer.Buffer
		if n < vnetCopyBelow {
			v := buffer.NewViewSize(n)
			b := v.AsSlice()
			copy(b, head)
			if n > vnetHeadLen {
				copy(b[vnetHeadLen:], bufs[1])
			}
			payload = buffer.MakeWithView(v)
		} else {
			payload = buffer.MakeWithView(takeView(views, 0, len(head)))
			for i, left := 1, n-vnetHeadLen; left > 0; i++ {
				size := min(left, vnetChunk)
				if err := payload.Append(takeView(views, i, size)); err != nil {
					break // cannot happen: the views are not empty
				}
				left -= size
			}
		}
		pkt := stack.NewPacketBuffer(stack.PacketBufferOptions{Payload: payload})
		pkt.NetworkProtocolNumber = proto
		pkt.RXChecksumValidated = true
		d.DeliverNetworkPacket(proto, pkt)
		pkt.DecRef()
	}
}

// takeView hands views[i], cut to size bytes, to the caller and leaves a
// nil in its place.
func takeView(views []*buffer.View, i, size int) *buffer.View {
	v := views[i]
	views[i] = nil
	v.CapLength(size)
	return v
}

// superPacket checks a packet of n bytes read whole from a virtio-header
// device, whose first bytes are head (at least the IP header when the
// packet has one), and returns its network protocol. For a TCP
// super-packet it sets the IP length, which the kernel may leave to the
// segmentation. It reports false for what cannot be delivered: not IP, too
// short, or a GSO type that was not asked for (UDP GSO is off: there is
// nothing to split it with).
func superPacket(head []byte, n int, gsoType uint8) (tcpip.NetworkProtocolNumber, bool) {
	switch gsoType {
	case vnetHdrGSONone, vnetHdrGSOTCPv4, vnetHdrGSOTCPv6:
	default:
		return 0, false
	}
	if n == 0 || len(head) == 0 {
		return 0, false
	}
	switch header.IPVersion(head) {
	case header.IPv4Version:
		if n < header.IPv4MinimumSize {
			return 0, false
		}
		if ip := header.IPv4(head); gsoType != vnetHdrGSONone && int(ip.TotalLength()) != n {
			ip.SetTotalLength(uint16(n))
			ip.SetChecksum(0)
			ip.SetChecksum(^ip.CalculateChecksum())
		}
		return header.IPv4ProtocolNumber, true
	case header.IPv6Version:
		if n < header.IPv6MinimumSize {
			return 0, false
		}
		if gsoType != vnetHdrGSONone {
			header.IPv6(head).SetPayloadLength(uint16(n - header.IPv6MinimumSize))
		}
		return header.IPv6ProtocolNumber, true
	}
	return 0, false
}

func (e *linkEndpoint) writeLoop() {
	defer e.wg.Done()
	defer guard.Fatal(e.restore)
	bufs := make([][]byte, e.batch)
	for i := range bufs {
		bufs[i] = make([]byte, tunOffset+maxSegment)
	}
	batch := make([][]byte, 0, e.batch)
	for {
		pkt := e.next()
		if pkt == nil {
			return
		}
		batch = batch[:0]
		for {
			buf := bufs[len(batch)][:tunOffset]
			for _, s := range pkt.AsSlices() {
				buf = append(buf, s...)
			}
			pkt.DecRef()
			batch = append(batch, buf)
			if len(batch) == e.batch {
				break
			}
			select {
			case pkt = <-e.out:
				continue
			default:
			}
			break
		}
		if _, err := e.dev.Write(batch, tunOffset); err != nil {
			if errors.Is(err, os.ErrClosed) {
				e.fail(err)
				return
			}
			// A packet the kernel refused (e.g. a bad address) is
			// dropped, as a NIC would drop it; the rest went out.
		}
	}
}

// vnetLoop is the writer on a virtio-header device: one writev per packet,
// straight from the packet's own memory.
func (e *linkEndpoint) vnetLoop() {
	defer e.wg.Done()
	defer guard.Fatal(e.restore)
	for {
		pkt := e.next()
		if pkt == nil {
			return
		}
		err := e.vnet.writePacket(pkt)
		pkt.DecRef()
		if err != nil && errors.Is(err, os.ErrClosed) {
			e.fail(err)
			return
		}
	}
}

// next waits for the writer's next queued packet; nil once the endpoint
// is closed.
func (e *linkEndpoint) next() *stack.PacketBuffer {
	select {
	case pkt := <-e.out:
		return pkt
	case <-e.done:
		return nil
	}
}

// readFailed counts a failed device read and reports whether the reader
// must stop (having reported err). A packet the device could not parse (a
// bad offload header) costs that packet only; a closed device, or a device
// that keeps failing, ends the reader.
func (e *linkEndpoint) readFailed(failures *int, err error) bool {
	if *failures++; !errors.Is(err, os.ErrClosed) && *failures < maxReadFailures {
		return false
	}
	e.fail(err)
	return true
}

// attached returns the dispatcher, nil before Attach.
func (e *linkEndpoint) attached() stack.NetworkDispatcher {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.dispatcher
}

func (e *linkEndpoint) fail(err error) {
	select {
	case <-e.done:
		return // closing: the error is expected
	default:
	}
	if e.onError != nil {
		e.onError(err)
	}
}

// close stops the goroutines and closes the device (which unblocks the
// reader's Read), returning the device's Close error.
func (e *linkEndpoint) close() error {
	e.closeMu.Do(func() { close(e.done) })
	err := e.dev.Close()
	e.wg.Wait()
	defer func() {
		for {
			select {
			case pkt := <-e.out:
				pkt.DecRef()
			default:
				return
			}
		}
	}()
	return err
}

// WritePackets queues packets for the writer goroutine. It runs with the
// TCP endpoint's lock held, so it does not write itself: a writev of 64 KiB
// into the kernel held there would stall the endpoint's ACK processing.
func (e *linkEndpoint) WritePackets(pkts stack.PacketBufferList) (int, tcpip.Error) {
	n := 0
	for _, pkt := range pkts.AsSlice() {
		if pkt.Size() > maxSegment {
			continue
		}
		pkt.IncRef()
		select {
		case e.out <- pkt:
			n++
		case <-e.done:
			pkt.DecRef()
			return n, &tcpip.ErrClosedForSend{}
		default:
			pkt.DecRef() // queue full: drop, as a full NIC ring does
			n++
		}
	}
	return n, nil
}

// MTU implements stack.LinkEndpoint.
func (e *linkEndpoint) MTU() uint32 { return e.mtu }

// SetMTU implements stack.LinkEndpoint.
func (e *linkEndpoint) SetMTU(mtu uint32) { e.mtu = mtu }

// GSOMaxSize implements stack.GSOEndpoint: TCP may hand segments of up to
// 64 KiB to gVisor's software GSO.
func (*linkEndpoint) GSOMaxSize() uint32 { return stack.GVisorGSOMaxSize }

// SupportedGSO implements stack.GSOEndpoint. On a virtio-header device the
// TCP sender hands over 64 KiB segments with a partial checksum, written
// whole with a GSO request for the kernel (host GSO). Elsewhere, with
// gVisor's software GSO, the sender works in 64 KiB segments and splits
// each into MSS-sized packets, which the writer passes to the device in
// batches that it may coalesce again.
func (e *linkEndpoint) SupportedGSO() stack.SupportedGSO {
	if e.vnet != nil {
		return stack.HostGSOSupported
	}
	return stack.GVisorGSOSupported
}

// MaxHeaderLength implements stack.LinkEndpoint: a TUN has no link header.
func (*linkEndpoint) MaxHeaderLength() uint16 { return 0 }

// LinkAddress implements stack.LinkEndpoint: a TUN has no link address.
func (*linkEndpoint) LinkAddress() tcpip.LinkAddress { return "" }

// SetLinkAddress implements stack.LinkEndpoint.
func (*linkEndpoint) SetLinkAddress(tcpip.LinkAddress) {}

// Capabilities implements stack.LinkEndpoint. Received checksums are
// trusted (they come from this machine's kernel); sent ones are computed by
// gVisor, because the device writes a packet that it does not coalesce
// without a checksum-offload request.
func (*linkEndpoint) Capabilities() stack.LinkEndpointCapabilities {
	return stack.CapabilityRXChecksumOffload
}

// Attach implements stack.LinkEndpoint.
func (e *linkEndpoint) Attach(d stack.NetworkDispatcher) {
	e.mu.Lock()
	e.dispatcher = d
	e.mu.Unlock()
}

// IsAttached implements stack.LinkEndpoint.
func (e *linkEndpoint) IsAttached() bool { return e.attached() != nil }

// Wait implements stack.LinkEndpoint.
func (e *linkEndpoint) Wait() { e.wg.Wait() }

// ARPHardwareType implements stack.LinkEndpoint.
func (*linkEndpoint) ARPHardwareType() header.ARPHardwareType { return header.ARPHardwareNone }

// AddHeader implements stack.LinkEndpoint: there is no link header.
func (*linkEndpoint) AddHeader(*stack.PacketBuffer) {}

// ParseHeader implements stack.LinkEndpoint: there is no link header.
func (*linkEndpoint) ParseHeader(*stack.PacketBuffer) bool { return true }

// Close implements stack.LinkEndpoint; the Stack closes the endpoint itself.
func (*linkEndpoint) Close() {}

// SetOnCloseAction implements stack.LinkEndpoint.
func (*linkEndpoint) SetOnCloseAction(func()) {}
