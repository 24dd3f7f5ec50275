package tun_test

import (
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/test/harness"
)

// TestSkiffRunTUNOfficialHysteria2 runs `skiff run --tun` with a link to
// the official Hysteria 2 server (test/peers/hysteria) in the server
// namespace: an app's UDP datagrams of 1400 and 3000 bytes, and every size
// from 1 to 3000, cross the TUN, the netstack and the tunnel intact in each
// direction on its own. Server-to-client datagrams of more than about 1390
// bytes are the ones that server's quic-go fork used to drop (see
// quicconn.MaxDatagramFrameSize).
func TestSkiffRunTUNOfficialHysteria2(t *testing.T) {
	l := newLab(t)
	dir := t.TempDir()
	cert, err := harness.NewCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &harness.Server{Kind: harness.Hysteria2, Port: 8446, Cert: cert, Password: "tun-e2e-official-hy2", LinkHost: srvAddr4}
	args, err := harness.HysteriaServerArgs(s)
	if err != nil {
		t.Fatal(err)
	}
	srv := harness.Start(t, "hysteria-server", "ip", append([]string{"netns", "exec", l.srv, harness.NeedHysteria(t)}, args...)...)
	if err := srv.WaitText(t.Context(), "hysteria server listening on"); err != nil {
		t.Fatalf("official hysteria server: %v", err)
	}
	sk := l.startSkiff(t, t.TempDir(), []string{s.Link(s.Trusting())})
	target := echoAddr4 + ":7005"
	for _, c := range []string{
		"udpsizes " + target + " D 1400,3000",
		"udpsizes " + target + " U 1400,3000",
		"udpsizes " + target + " D 1-3000",
		"udpsizes " + target + " U 1-3000",
		"tcp " + echoAddr4 + ":7001",
	} {
		out, err := l.client(c)
		if err != nil || !strings.HasPrefix(out, "ok") {
			t.Errorf("%s: %v %s", c, err, out)
		} else {
			t.Logf("%s: %s", c, out)
		}
	}
	sk.stop(t)
}
