package wireguard

import (
	"fmt"
	"strconv"
	"strings"

	awgconn "github.com/amnezia-vpn/amneziawg-go/conn"
	awgdevice "github.com/amnezia-vpn/amneziawg-go/device"
	awgtun "github.com/amnezia-vpn/amneziawg-go/tun"
	"golang.zx2c4.com/wireguard/conn"

	"github.com/skiffvpn/skiff/core/node"
)

// AmneziaWG (github.com/amnezia-vpn/amneziawg-go v0.2.12, MIT) is
// wireguard-go with junk packets before the handshake (jc, jmin, jmax),
// padding of the handshake messages (s1, s2) and its own message types
// (h1..h4). It is a fork with its own device, conn and tun types, so the
// same stack and Bind are adapted to them here. That version speaks
// AmneziaWG 1.0: the 1.5 and 2.0 fields (s3, s4, i1..i5, header ranges)
// grey the node.

// amneziaUAPI checks a's fields and returns them as UAPI lines.
func amneziaUAPI(a *node.AmneziaOptions) (string, error) {
	if a.S[2] != 0 || a.S[3] != 0 {
		return "", fmt.Errorf("AmneziaWG 1.5 padding (s3, s4) is not supported")
	}
	for _, i := range a.I {
		if i != "" {
			return "", fmt.Errorf("AmneziaWG 1.5 special junk packets (i1-i5) are not supported")
		}
	}
	var b strings.Builder
	for _, kv := range []struct {
		k string
		v int
	}{{"jc", a.JunkCount}, {"jmin", a.JunkMin}, {"jmax", a.JunkMax}, {"s1", a.S[0]}, {"s2", a.S[1]}} {
		if kv.v != 0 {
			fmt.Fprintf(&b, "%s=%d\n", kv.k, kv.v)
		}
	}
	for i, h := range a.H {
		if h == "" {
			continue
		}
		if _, err := strconv.ParseUint(h, 10, 32); err != nil {
			return "", fmt.Errorf("AmneziaWG 2 header ranges (h%d %q) are not supported", i+1, h)
		}
		fmt.Fprintf(&b, "h%d=%s\n", i+1, h)
	}
	if a.JunkMax < a.JunkMin {
		return "", fmt.Errorf("AmneziaWG jmax below jmin")
	}
	return b.String(), nil
}

// newAmneziaDevice is newDevice for AmneziaWG.
func newAmneziaDevice(t *netTUN, b *Bind) wgDevice {
	at := &awgTUN{netTUN: t, events: make(chan awgtun.Event, 1)}
	at.events <- awgtun.EventUp
	return awgdevice.NewDevice(at, awgBind{b}, &awgdevice.Logger{Verbosef: awgdevice.DiscardLogf, Errorf: awgdevice.DiscardLogf})
}

// awgTUN is the stack as amneziawg-go's tun.Device: only Events' type
// differs.
type awgTUN struct {
	*netTUN
	events chan awgtun.Event
}

func (t *awgTUN) Events() <-chan awgtun.Event { return t.events }

func (t *awgTUN) Close() error {
	close(t.events)
	return t.netTUN.Close()
}

// awgBind is Bind as amneziawg-go's conn.Bind. The reserved bytes are
// not touched: AmneziaWG's message types fill all four bytes.
type awgBind struct{ b *Bind }

func (a awgBind) Open(port uint16) ([]awgconn.ReceiveFunc, uint16, error) {
	fns, p, err := a.b.Open(port)
	out := make([]awgconn.ReceiveFunc, len(fns))
	for i, fn := range fns {
		out[i] = func(packets [][]byte, sizes []int, eps []awgconn.Endpoint) (int, error) {
			tmp := make([]conn.Endpoint, len(eps))
			n, err := fn(packets, sizes, tmp)
			for j := 0; j < n; j++ {
				eps[j] = tmp[j].(endpoint)
			}
			return n, err
		}
	}
	return out, p, err
}

func (a awgBind) Close() error           { return a.b.Close() }
func (a awgBind) SetMark(m uint32) error { return a.b.SetMark(m) }
func (a awgBind) BatchSize() int         { return a.b.BatchSize() }
func (a awgBind) Send(bufs [][]byte, ep awgconn.Endpoint) error {
	e, ok := ep.(endpoint)
	if !ok {
		return awgconn.ErrWrongEndpointType
	}
	return a.b.Send(bufs, e)
}
func (a awgBind) ParseEndpoint(s string) (awgconn.Endpoint, error) {
	ep, err := a.b.ParseEndpoint(s)
	if err != nil {
		return nil, err
	}
	return ep.(endpoint), nil
}
