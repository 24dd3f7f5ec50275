package harness

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Shadowsocks is a sing-box Shadowsocks server (Server.Method; a plugin's
// server in front of it when Server.Plugin is set).
const Shadowsocks Kind = "shadowsocks"

// Shadowsocks plugins the harness can put in front of sing-box, which
// serves no SIP003 plugin itself: simple-obfs's obfs-server and
// v2ray-plugin in server mode (Debian packages simple-obfs and
// shadowsocks-v2ray-plugin).
const (
	PluginObfsHTTP   = "obfs-http"
	PluginObfsTLS    = "obfs-tls"
	PluginV2ray      = "v2ray-plugin"     // WebSocket
	PluginV2rayTLS   = "v2ray-plugin-tls" // WebSocket over TLS
	pluginInnerHost  = "127.0.0.1"
	obfsServerBin    = "obfs-server"
	v2rayPluginBin   = "ss-v2ray-plugin" // Debian's name; "v2ray-plugin" elsewhere
	ssMultiUserLabel = "user"
)

// ssPassword is the password a client uses: the server's, or on a
// multi-user server iPSK:uPSK.
func (s *Server) ssPassword() string {
	if s.SSUserPSK != "" {
		return s.Password + ":" + s.SSUserPSK
	}
	return s.Password
}

// ssInbound fills in a sing-box shadowsocks inbound. With a plugin,
// sing-box listens on PluginInnerPort and the plugin on Port.
func (s *Server) ssInbound(in map[string]any) {
	in["type"] = "shadowsocks"
	in["method"] = s.Method
	in["password"] = s.Password
	if s.SSUserPSK != "" {
		in["users"] = []map[string]any{{"name": ssMultiUserLabel, "password": s.SSUserPSK}}
	}
	if s.Plugin != "" {
		in["listen_port"] = s.PluginInnerPort
	}
	if s.Plugin != "" || s.SSUoT != 0 {
		in["network"] = "tcp"
	}
}

// ssPluginClient is the plugin name and SIP003 options a client uses.
func (s *Server) ssPluginClient() (string, string) {
	switch s.Plugin {
	case PluginObfsHTTP:
		return "obfs-local", "obfs=http;obfs-host=www.example.com"
	case PluginObfsTLS:
		return "obfs-local", "obfs=tls;obfs-host=www.example.com"
	case PluginV2ray:
		return "v2ray-plugin", "mode=websocket;host=localhost;path=/ss"
	case PluginV2rayTLS:
		raw := strings.TrimSpace(string(s.Cert.CertPEM))
		raw = strings.TrimPrefix(raw, "-----BEGIN CERTIFICATE-----")
		raw = strings.TrimSuffix(raw, "-----END CERTIFICATE-----")
		raw = strings.ReplaceAll(strings.TrimSpace(raw), "\n", "")
		return "v2ray-plugin", "tls;host=localhost;path=/ss;certRaw=" + strings.ReplaceAll(raw, "=", "\\=")
	}
	return "", ""
}

// ssLink is the server's ss:// link (SIP002; SIP022 percent-encodes the
// userinfo of 2022 methods).
func (s *Server) ssLink() string {
	var user string
	if strings.HasPrefix(s.Method, "2022-") {
		user = url.PathEscape(s.Method) + ":" + url.PathEscape(s.ssPassword())
		user = strings.ReplaceAll(user, "+", "%2B")
		user = strings.ReplaceAll(user, "/", "%2F")
		user = strings.ReplaceAll(user, "=", "%3D")
	} else {
		user = base64.RawURLEncoding.EncodeToString([]byte(s.Method + ":" + s.ssPassword()))
	}
	var q []string
	if name, opts := s.ssPluginClient(); name != "" {
		q = append(q, "plugin="+url.QueryEscape(name+";"+opts))
	}
	if s.SSUoT != 0 {
		q = append(q, "udp-over-tcp=true", "udp-over-tcp-version="+strconv.Itoa(s.SSUoT))
	}
	link := "ss://" + user + "@" + s.linkAddr()
	if len(q) > 0 {
		link += "/?" + strings.Join(q, "&")
	}
	return link + "#" + s.Name()
}

// ssOutbound fills in a sing-box shadowsocks client outbound.
func (s *Server) ssOutbound(out map[string]any) {
	delete(out, "tls")
	out["type"] = "shadowsocks"
	out["method"] = s.Method
	out["password"] = s.ssPassword()
	if s.SSUoT != 0 {
		out["udp_over_tcp"] = map[string]any{"enabled": true, "version": s.SSUoT}
	}
	if name, opts := s.ssPluginClient(); name != "" {
		out["plugin"] = name
		out["plugin_opts"] = opts
		if s.Plugin == PluginV2rayTLS {
			out["plugin_opts"] = "tls;host=localhost;path=/ss;cert=" + s.Cert.CertFile
		}
	}
}

// NeedPlugin skips t when the plugin server's program is not installed.
func NeedPlugin(t testing.TB, plugin string) string {
	t.Helper()
	bin := obfsServerBin
	if plugin != PluginObfsHTTP && plugin != PluginObfsTLS {
		bin = v2rayPluginBin
	}
	path, err := exec.LookPath(bin)
	if err != nil && bin == v2rayPluginBin {
		path, err = exec.LookPath("v2ray-plugin")
	}
	if err != nil {
		t.Skipf("%s is not installed (make deps installs it)", bin)
	}
	return path
}

// StartSSPlugin starts the plugin server of s in front of its sing-box
// (SIP003: it listens on SS_REMOTE_*, forwards to SS_LOCAL_*) and waits
// until it listens. It stops it in t.Cleanup.
func StartSSPlugin(t testing.TB, s *Server) *Process {
	t.Helper()
	bin := NeedPlugin(t, s.Plugin)
	var opts string
	switch s.Plugin {
	case PluginObfsHTTP:
		opts = "obfs=http"
	case PluginObfsTLS:
		opts = "obfs=tls"
	case PluginV2ray:
		opts = "server;host=localhost;path=/ss"
	case PluginV2rayTLS:
		opts = fmt.Sprintf("server;tls;host=localhost;path=/ss;cert=%s;key=%s", s.Cert.CertFile, s.Cert.KeyFile)
	default:
		t.Fatalf("harness: unknown plugin %q", s.Plugin)
	}
	p := Start(t, s.Plugin+"-server", "/usr/bin/env",
		"SS_REMOTE_HOST=127.0.0.1", "SS_REMOTE_PORT="+strconv.Itoa(s.Port),
		"SS_LOCAL_HOST="+pluginInnerHost, "SS_LOCAL_PORT="+strconv.Itoa(s.PluginInnerPort),
		"SS_PLUGIN_OPTIONS="+opts, bin)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := WaitTCP(ctx, net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port))); err != nil {
		t.Fatalf("%s: %v\n%s", s.Plugin, err, p.Output())
	}
	return p
}
