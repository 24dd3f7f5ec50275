package e2e

import (
	"context"

	"io"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/api"
	"github.com/skiffvpn/skiff/core/link"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/test/harness"
)

// TestLiveSwitch picks another server while a download runs through the
// first (api.Local.Select): the download goes on through the first
// server, a new flow goes through the pick, and nothing reconnects. It
// does so for a pick of a node (the profile's selection), of a select
// group's member, and with Settings.CloseOnSwitch, which closes the
// download instead.
func TestLiveSwitch(t *testing.T) {
	var servers [2]*harness.Server
	for i := range servers {
		servers[i] = newServer(t, setup{kind: harness.TrojanTLS})
		startServer(t, servers[i])
	}
	sink, err := harness.ServeTCP(harness.SinkSource)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sink.Close() })

	for _, tc := range []struct {
		name     string
		viaGroup bool
		closeOld bool
	}{
		{"node", false, false},
		{"select group member", true, false},
		{"close on switch", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, err := profile.Open(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			p := profile.New()
			var ids [2]string
			for i, s := range servers {
				n, err := link.Parse(s.Link(s.Trusting()))
				if err != nil {
					t.Fatal(err)
				}
				n.Name = "server " + strconv.Itoa(i)
				ids[i] = profile.NodeID("", n)
				p.Nodes = append(p.Nodes, &profile.Node{ID: ids[i], Config: *n})
			}
			p.Selected = ids[0]
			if tc.viaGroup {
				p.Groups = []*profile.Group{{ID: "gsel", Name: "Pick", Type: profile.GroupSelector, Members: ids[:], Selected: ids[0]}}
				p.Selected = "gsel"
			}
			p.Settings.CloseOnSwitch = tc.closeOld
			if err := store.Save(p); err != nil {
				t.Fatal(err)
			}
			ctrl := core.NewController(core.Options{LogOutput: io.Discard})
			l := api.NewLocal(ctrl, store, nil)
			t.Cleanup(func() { l.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			port, err := harness.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.Connect(ctx, plan.Request{Listen: "127.0.0.1:" + strconv.Itoa(port)}); err != nil {
				t.Fatal(err)
			}
			st, _ := l.Status(ctx)
			since := st.Since

			dl := startDownload(t, ctx, st.Listen, sink.Addr())
			dl.waitBytes(t, 1<<20)
			if m := memberOf(t, l, dl.local); m != "server 0" {
				t.Fatalf("the download went through %q, want server 0", m)
			}

			req := api.SelectRequest{ID: ids[1]}
			if tc.viaGroup {
				req.Group = "gsel"
			}
			res, err := l.Select(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Live || res.Reconnected {
				t.Fatalf("select: %+v, want a live switch", res)
			}
			if st, _ := l.Status(ctx); st.State != core.Running || !st.Since.Equal(since) || st.Member != "server 1" {
				t.Fatalf("after the switch: state %v since %v (was %v), member %q", st.State, st.Since, since, st.Member)
			}

			if tc.closeOld {
				if res.Closed != 1 {
					t.Errorf("closed %d flows, want the download's 1", res.Closed)
				}
				if err := dl.waitEnd(5 * time.Second); err == nil {
					t.Fatal("the download on the old server is still running with CloseOnSwitch")
				}
			} else {
				before := dl.n.Load()
				dl.waitBytes(t, before+4<<20) // it goes on: 4 MiB more after the switch
				if m := memberOf(t, l, dl.local); m != "server 0" {
					t.Fatalf("the download moved to %q", m)
				}
			}

			// A new flow goes through the pick.
			dl2 := startDownload(t, ctx, st.Listen, sink.Addr())
			dl2.waitBytes(t, 1<<20)
			if m := memberOf(t, l, dl2.local); m != "server 1" {
				t.Fatalf("a new flow went through %q, want server 1", m)
			}
			saved, _, _ := l.Profile(ctx)
			if tc.viaGroup && saved.Group("gsel").Selected != ids[1] || !tc.viaGroup && saved.Selected != ids[1] {
				t.Errorf("the pick was not saved: selected %q", saved.Selected)
			}
		})
	}
}

// download reads from a sink through the proxy and counts the bytes.
type download struct {
	n     atomic.Int64
	local string // the client's address, as the connection table shows it
	done  chan error
}

func startDownload(t *testing.T, ctx context.Context, proxy, sink string) *download {
	t.Helper()
	c, err := harness.DialSOCKS(ctx, proxy, sink)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte{harness.SinkDownload}); err != nil {
		t.Fatal(err)
	}
	d := &download{local: c.LocalAddr().String(), done: make(chan error, 1)}
	go func() {
		buf := make([]byte, 64<<10)
		for {
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			k, err := c.Read(buf)
			d.n.Add(int64(k))
			if err != nil {
				d.done <- err
				return
			}
		}
	}()
	return d
}

// waitBytes waits until the download has read n bytes; it fails t when
// the download ends or stalls first.
func (d *download) waitBytes(t *testing.T, n int64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for d.n.Load() < n {
		select {
		case err := <-d.done:
			t.Fatalf("the download ended after %d bytes: %v", d.n.Load(), err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the download stalled at %d bytes, want %d", d.n.Load(), n)
		}
	}
}

// waitEnd waits up to d for the download to end; nil: it did not.
func (d *download) waitEnd(limit time.Duration) error {
	select {
	case err := <-d.done:
		if err == nil {
			err = io.EOF
		}
		return err
	case <-time.After(limit):
		return nil
	}
}

// memberOf returns the server that carries the connection from local.
func memberOf(t *testing.T, l *api.Local, local string) string {
	t.Helper()
	cs, err := l.Connections(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(local)
	for _, c := range cs {
		if _, p, _ := net.SplitHostPort(c.Source); p == port {
			return c.Member
		}
	}
	t.Fatalf("no connection from %s among %d", local, len(cs))
	return ""
}
