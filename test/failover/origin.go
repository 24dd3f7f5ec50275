package failover

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// OriginPort is the origin's HTTP port on Topology.OriginIP.
const OriginPort = 80

// bigChunk is what /big writes at a time.
const bigChunk = 32 << 10

// StartOrigin serves HTTP on OriginIP:OriginPort in the server namespace
// for t, until t's cleanup:
//
//	/generate_204  204, for the members' health probes
//	/small         200 with the source address the origin saw ("10.202.0.2")
//	/big           200 streaming zeros at ?rate=B bytes/s (default 2 MiB/s) until the client leaves
//	/__down        200 with ?bytes=N zeros (at most 16 MiB), as fast as the path takes them: skiff's speed probes
//
// The download is paced so that it does not eat the shared machine's CPU.
// speedServed, if not nil, counts the bytes /__down has written.
func StartOrigin(t testing.TB, topo *Topology, speedServed *atomic.Int64) string {
	t.Helper()
	addr := netip.AddrPortFrom(topo.OriginIP, OriginPort).String()
	var ln net.Listener
	err := InNS(topo.Server, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/generate_204", func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) {
		ap, err := netip.ParseAddrPort(r.RemoteAddr)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(ap.Addr().String()))
	})
	mux.HandleFunc("/__down", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("bytes"))
		n = min(max(n, 0), 16<<20)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(n))
		buf := make([]byte, bigChunk)
		for n > 0 {
			k, err := w.Write(buf[:min(n, len(buf))])
			if speedServed != nil {
				speedServed.Add(int64(k))
			}
			if err != nil {
				return
			}
			n -= k
		}
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		rate, _ := strconv.Atoi(r.URL.Query().Get("rate"))
		if rate <= 0 {
			rate = 2 << 20
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("X-Source", r.RemoteAddr)
		buf := make([]byte, bigChunk)
		tick := time.NewTicker(time.Duration(int64(time.Second) * bigChunk / int64(rate)))
		defer tick.Stop()
		rc := http.NewResponseController(w)
		for {
			if _, err := w.Write(buf); err != nil {
				return
			}
			rc.Flush()
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
			}
		}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		srv.Close()
	})
	return addr
}
