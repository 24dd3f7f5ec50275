package link

import (
	"encoding/base64"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core/node"
)

const (
	testUUID = "b831381d-6324-4d53-ad4f-8cda48b30811"
	testPBK  = "Z84J2IelR9ch3k8VtlVhhs5ycBUlXA7wHBWcBrjqnAw"
	testPin  = "ba88453ba6f5e1b5e1f1c1b0b4a5f7d3a8e9f2c6b1d0e4f5a6b7c8d9e0f1a2b3"
)

// validCases are realistic links and the nodes they must give.
var validCases = []struct {
	name string
	link string
	want node.Node
}{
	// Hysteria2 (hysteria.network URI scheme).
	{"hy2 spec example", "hysteria2://letmein@example.com:123,5000-6000/?insecure=1&obfs=salamander&obfs-password=gawrgura&pinSHA256=" + testPin + "&sni=real.example.com#",
		node.Node{Name: "example.com:123", Protocol: node.Hysteria2, Server: "example.com", Port: 123,
			TLS:       &node.TLS{SNI: "real.example.com", Insecure: true, PinSHA256: testPin},
			Hysteria2: &node.Hysteria2Options{Auth: "letmein", Ports: "123,5000-6000", Obfs: "salamander", ObfsPassword: "gawrgura"}}},
	{"hy2 alias default port no slash", "hy2://secret@example.com#My%20Server",
		node.Node{Name: "My Server", Protocol: node.Hysteria2, Server: "example.com", Port: 443,
			Hysteria2: &node.Hysteria2Options{Auth: "secret"}}},
	{"hy2 userpass auth percent-encoded", "hysteria2://alice:p%40ss%2Fw0rd@198.51.100.7:8443/?sni=www.example.org&insecure=true#%E6%97%A5%E6%9C%AC%20%F0%9F%87%AF%F0%9F%87%B5",
		node.Node{Name: "日本 🇯🇵", Protocol: node.Hysteria2, Server: "198.51.100.7", Port: 8443,
			TLS:       &node.TLS{SNI: "www.example.org", Insecure: true},
			Hysteria2: &node.Hysteria2Options{Auth: "alice:p@ss/w0rd"}}},
	{"hy2 IPv6 multi-port", "hysteria2://pw@[2001:DB8:0::1]:443,8443,20000-30000/?obfs=salamander&obfs-password=o%2Bbf#v6",
		node.Node{Name: "v6", Protocol: node.Hysteria2, Server: "2001:db8::1", Port: 443,
			Hysteria2: &node.Hysteria2Options{Auth: "pw", Ports: "443,8443,20000-30000", Obfs: "salamander", ObfsPassword: "o+bf"}}},
	{"hy2 IPv6 default port", "hy2://pw@[2001:db8::2]/?sni=a.example#",
		node.Node{Name: "[2001:db8::2]:443", Protocol: node.Hysteria2, Server: "2001:db8::2", Port: 443,
			TLS: &node.TLS{SNI: "a.example"}, Hysteria2: &node.Hysteria2Options{Auth: "pw"}}},
	{"hy2 mport and bandwidth", "hy2://pw@hop.example.net:443?mport=443,5000-6000&upmbps=50&downmbps=200&pinSHA256=" + strings.ToUpper(colons(testPin)) + "#hop",
		node.Node{Name: "hop", Protocol: node.Hysteria2, Server: "hop.example.net", Port: 443,
			TLS:       &node.TLS{PinSHA256: testPin},
			Hysteria2: &node.Hysteria2Options{Auth: "pw", Ports: "443,5000-6000", UpMbps: 50, DownMbps: 200}}},
	{"hy2 no auth BOM and spaces", "\uFEFF  hysteria2://example.com:4443/?obfs=none  \n",
		node.Node{Name: "example.com:4443", Protocol: node.Hysteria2, Server: "example.com", Port: 4443,
			Hysteria2: &node.Hysteria2Options{}}},

	// VLESS (Xray share-link proposal).
	{"vless reality vision", "vless://" + testUUID + "@203.0.113.10:443?encryption=none&flow=xtls-rprx-vision&security=reality&sni=www.microsoft.com&fp=chrome&pbk=" + testPBK + "&sid=6ba85179e30d4fc2&spx=%2F&type=tcp&headerType=none#REALITY%20%F0%9F%87%A9%F0%9F%87%AA",
		node.Node{Name: "REALITY 🇩🇪", Protocol: node.VLESS, Server: "203.0.113.10", Port: 443,
			TLS:   &node.TLS{SNI: "www.microsoft.com", Fingerprint: "chrome", Reality: &node.Reality{PublicKey: testPBK, ShortID: "6ba85179e30d4fc2", SpiderX: "/"}},
			VLESS: &node.VLESSOptions{UUID: testUUID, Flow: "xtls-rprx-vision", Encryption: "none"}}},
	{"vless ws tls early data", "vless://" + strings.ToUpper(testUUID) + "@cdn.example.com:443?encryption=none&security=tls&sni=ws.example.com&alpn=h2%2Chttp%2F1.1&fp=firefox&type=ws&host=ws.example.com&path=%2Fws%3Fed%3D2560&allowInsecure=1#ws",
		node.Node{Name: "ws", Protocol: node.VLESS, Server: "cdn.example.com", Port: 443,
			TLS:       &node.TLS{SNI: "ws.example.com", ALPN: []string{"h2", "http/1.1"}, Fingerprint: "firefox", Insecure: true},
			Transport: &node.Transport{Type: node.TransportWS, Host: "ws.example.com", Path: "/ws", MaxEarlyData: 2560},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},
	{"vless ws early data among other params", "vless://" + testUUID + "@cdn.example.com:8080?type=ws&path=%2Fa%3Fx%3D1%26ed%3D2048%26y%3D2#",
		node.Node{Name: "cdn.example.com:8080", Protocol: node.VLESS, Server: "cdn.example.com", Port: 8080,
			Transport: &node.Transport{Type: node.TransportWS, Path: "/a?x=1&y=2", MaxEarlyData: 2048},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},
	{"vless grpc insecure=1 IPv6", "vless://" + testUUID + "@[2001:db8:85a3::8a2e:370:7334]:2053?security=tls&type=grpc&serviceName=grpc-svc&insecure=1#g",
		node.Node{Name: "g", Protocol: node.VLESS, Server: "2001:db8:85a3::8a2e:370:7334", Port: 2053,
			TLS:       &node.TLS{Insecure: true},
			Transport: &node.Transport{Type: node.TransportGRPC, ServiceName: "grpc-svc"},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},
	{"vless raw http header allow_insecure", "vless://" + testUUID + "@example.com:80?type=raw&headerType=http&host=speedtest.net&path=%2F&security=tls&allow_insecure=true#h",
		node.Node{Name: "h", Protocol: node.VLESS, Server: "example.com", Port: 80,
			TLS:       &node.TLS{Insecure: true},
			Transport: &node.Transport{Type: node.TransportTCP, HeaderType: "http", Host: "speedtest.net", Path: "/"},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},
	{"vless grpc multi authority", "vless://" + testUUID + "@example.com:443?security=reality&pbk=" + testPBK + "&sid=ab&sni=www.example.org&fp=chrome&type=grpc&serviceName=%2Fa%2Fb%2FStream&mode=multi&authority=front.example.com#m",
		node.Node{Name: "m", Protocol: node.VLESS, Server: "example.com", Port: 443,
			TLS:       &node.TLS{SNI: "www.example.org", Fingerprint: "chrome", Reality: &node.Reality{PublicKey: testPBK, ShortID: "ab"}},
			Transport: &node.Transport{Type: node.TransportGRPC, ServiceName: "/a/b/Stream", MultiMode: true, Authority: "front.example.com"},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},
	{"trojan grpc mode gun", "trojan://pw@example.com:443?type=grpc&serviceName=g&mode=gun#t",
		node.Node{Name: "t", Protocol: node.Trojan, Server: "example.com", Port: 443,
			TLS:       &node.TLS{},
			Transport: &node.Transport{Type: node.TransportGRPC, ServiceName: "g"},
			Trojan:    &node.TrojanOptions{Password: "pw"}}},
	{"vless httpupgrade fast open", "vless://" + testUUID + "@example.com:443?security=tls&type=httpupgrade&host=h.example.com&path=%2Fup%3Fed%3D2048#",
		node.Node{Name: "example.com:443", Protocol: node.VLESS, Server: "example.com", Port: 443,
			TLS:       &node.TLS{},
			Transport: &node.Transport{Type: node.TransportHTTPUpgrade, Host: "h.example.com", Path: "/up", MaxEarlyData: 2048},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},
	{"vless httpupgrade plain", "vless://" + testUUID + "@example.com:80?encryption=none&security=none&type=httpupgrade&host=h.example.com&path=%2Fup#",
		node.Node{Name: "example.com:80", Protocol: node.VLESS, Server: "example.com", Port: 80,
			Transport: &node.Transport{Type: node.TransportHTTPUpgrade, Host: "h.example.com", Path: "/up"},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},
	{"vless h2", "vless://" + testUUID + "@example.com:443?security=tls&type=http&host=a.example.com&path=%2Fh2#h2",
		node.Node{Name: "h2", Protocol: node.VLESS, Server: "example.com", Port: 443,
			TLS:       &node.TLS{},
			Transport: &node.Transport{Type: node.TransportH2, Host: "a.example.com", Path: "/h2"},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},

	{"vless pcs and vcn (Xray after allowInsecure)", "vless://" + testUUID + "@sub.example.net:443?encryption=none&type=ws&security=tls&sni=sub.example.net&alpn&host=sub.example.net&path=/new&pcs=" + strings.ToUpper(testPin) + "&vcn=test.example.com#TEST",
		node.Node{Name: "TEST", Protocol: node.VLESS, Server: "sub.example.net", Port: 443,
			TLS:       &node.TLS{SNI: "sub.example.net", PinSHA256: testPin},
			Transport: &node.Transport{Type: node.TransportWS, Host: "sub.example.net", Path: "/new"},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},

	// Trojan (trojan-url).
	{"trojan plain", "trojan://p%40ssw0rd@example.com:443?allowInsecure=1#Trojan%20%E2%9C%93",
		node.Node{Name: "Trojan ✓", Protocol: node.Trojan, Server: "example.com", Port: 443,
			TLS: &node.TLS{Insecure: true}, Trojan: &node.TrojanOptions{Password: "p@ssw0rd"}}},
	{"trojan ws default port", "trojan://secret@example.com?security=tls&sni=t.example.com&type=ws&path=%2Ftr&host=t.example.com#",
		node.Node{Name: "example.com:443", Protocol: node.Trojan, Server: "example.com", Port: 443,
			TLS:       &node.TLS{SNI: "t.example.com"},
			Transport: &node.Transport{Type: node.TransportWS, Host: "t.example.com", Path: "/tr"},
			Trojan:    &node.TrojanOptions{Password: "secret"}}},
	{"trojan peer IPv6 grpc", "trojan://pw@[::1]:8443?peer=p.example.com&type=grpc&serviceName=tr#x",
		node.Node{Name: "x", Protocol: node.Trojan, Server: "::1", Port: 8443,
			TLS:       &node.TLS{SNI: "p.example.com"},
			Transport: &node.Transport{Type: node.TransportGRPC, ServiceName: "tr"},
			Trojan:    &node.TrojanOptions{Password: "pw"}}},
	{"trojan security none", "trojan://pw@10.0.0.1:80?security=none#n",
		node.Node{Name: "n", Protocol: node.Trojan, Server: "10.0.0.1", Port: 80, Trojan: &node.TrojanOptions{Password: "pw"}}},

	// VMess (v2rayN base64 JSON).
	{"vmess ws tls std base64 string port", vmessLink(base64.StdEncoding, `{"v":"2","ps":"香港 01","add":"hk.example.com","port":"443","id":"`+testUUID+`","aid":"0","scy":"auto","net":"ws","type":"none","host":"hk.example.com","path":"/ray?ed=2048","tls":"tls","sni":"hk.example.com","alpn":"h2,http/1.1","fp":"chrome"}`),
		node.Node{Name: "香港 01", Protocol: node.VMess, Server: "hk.example.com", Port: 443,
			TLS:       &node.TLS{SNI: "hk.example.com", ALPN: []string{"h2", "http/1.1"}, Fingerprint: "chrome"},
			Transport: &node.Transport{Type: node.TransportWS, Host: "hk.example.com", Path: "/ray", MaxEarlyData: 2048},
			VMess:     &node.VMessOptions{UUID: testUUID, Security: "auto"}}},
	{"vmess numeric port url alphabet unpadded", vmessLink(base64.RawURLEncoding, `{"v":2,"ps":"","add":"2001:db8::9","port":10086,"id":"`+testUUID+`","aid":64,"scy":"aes-128-gcm","net":"tcp","type":"http","host":"bing.com","path":"/","tls":""}`),
		node.Node{Name: "[2001:db8::9]:10086", Protocol: node.VMess, Server: "2001:db8::9", Port: 10086,
			Transport: &node.Transport{Type: node.TransportTCP, HeaderType: "http", Host: "bing.com", Path: "/"},
			VMess:     &node.VMessOptions{UUID: testUUID, AlterID: 64, Security: "aes-128-gcm"}}},
	{"vmess grpc minimal", vmessLink(base64.StdEncoding, `{"add":"g.example.com","port":"8443","id":"`+testUUID+`","net":"grpc","type":"gun","path":"svc","tls":"tls"}`),
		node.Node{Name: "g.example.com:8443", Protocol: node.VMess, Server: "g.example.com", Port: 8443,
			TLS:       &node.TLS{},
			Transport: &node.Transport{Type: node.TransportGRPC, ServiceName: "svc"},
			VMess:     &node.VMessOptions{UUID: testUUID, Security: "auto"}}},
	{"vmess grpc multi (3x-ui)", vmessLink(base64.StdEncoding, `{"add":"g.example.com","port":"443","id":"`+testUUID+`","net":"grpc","type":"multi","path":"svc","authority":"a.example.com","tls":"tls"}`),
		node.Node{Name: "g.example.com:443", Protocol: node.VMess, Server: "g.example.com", Port: 443,
			TLS:       &node.TLS{},
			Transport: &node.Transport{Type: node.TransportGRPC, ServiceName: "svc", MultiMode: true, Authority: "a.example.com"},
			VMess:     &node.VMessOptions{UUID: testUUID, Security: "auto"}}},
	{"vmess grpc type none", vmessLink(base64.StdEncoding, `{"add":"g.example.com","port":"443","id":"`+testUUID+`","net":"grpc","type":"none","path":"svc","tls":"tls"}`),
		node.Node{Name: "g.example.com:443", Protocol: node.VMess, Server: "g.example.com", Port: 443,
			TLS:       &node.TLS{},
			Transport: &node.Transport{Type: node.TransportGRPC, ServiceName: "svc"},
			VMess:     &node.VMessOptions{UUID: testUUID, Security: "auto"}}},
	{"vmess URL form", "vmess://" + testUUID + "@example.com:443?encryption=chacha20-poly1305&security=tls&type=ws&path=%2Fv#url",
		node.Node{Name: "url", Protocol: node.VMess, Server: "example.com", Port: 443,
			TLS:       &node.TLS{},
			Transport: &node.Transport{Type: node.TransportWS, Path: "/v"},
			VMess:     &node.VMessOptions{UUID: testUUID, Security: "chacha20-poly1305"}}},

	// Shadowsocks (SIP002, SIP022, legacy).
	{"ss SIP002 base64url", "ss://YWVzLTEyOC1nY206dGVzdA@192.168.100.1:8888#Example1",
		node.Node{Name: "Example1", Protocol: node.Shadowsocks, Server: "192.168.100.1", Port: 8888,
			Shadowsocks: &node.ShadowsocksOptions{Method: "aes-128-gcm", Password: "test"}}},
	{"ss SIP002 padded std plugin", "ss://Y2hhY2hhMjAtaWV0Zi1wb2x5MTMwNTpwQHNzOncvcmQ=@[2001:db8::7]:8388/?plugin=obfs-local%3Bobfs%3Dhttp%3Bobfs-host%3Dwww.bing.com#%F0%9F%9A%80%20fast",
		node.Node{Name: "🚀 fast", Protocol: node.Shadowsocks, Server: "2001:db8::7", Port: 8388,
			Shadowsocks: &node.ShadowsocksOptions{Method: "chacha20-ietf-poly1305", Password: "p@ss:w/rd", Plugin: "obfs-local", PluginOpts: "obfs=http;obfs-host=www.bing.com"}}},
	{"ss 2022 percent-encoded", "ss://2022-blake3-aes-256-gcm:ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1%2Bf4CBgoM%3D@192.168.100.1:8888#Example3",
		node.Node{Name: "Example3", Protocol: node.Shadowsocks, Server: "192.168.100.1", Port: 8888,
			Shadowsocks: &node.ShadowsocksOptions{Method: "2022-blake3-aes-256-gcm", Password: "ZGVmZ2hpamtsbW5vcHFyc3R1dnd4eXp7fH1+f4CBgoM="}}},
	{"ss 2022 multi-user keys", "ss://2022-blake3-aes-128-gcm:AQIDBAUGBwgJCgsMDQ4PEA%3D%3D:AQIDBAUGBwgJCgsMDQ4PEA%3D%3D@example.com:443#multi",
		node.Node{Name: "multi", Protocol: node.Shadowsocks, Server: "example.com", Port: 443,
			Shadowsocks: &node.ShadowsocksOptions{Method: "2022-blake3-aes-128-gcm", Password: "AQIDBAUGBwgJCgsMDQ4PEA==:AQIDBAUGBwgJCgsMDQ4PEA=="}}},
	{"ss legacy whole base64", "ss://YWVzLTI1Ni1nY206bGVnYWN5LXBhc3NAMjAzLjAuMTEzLjU6ODM4OA==#Legacy%20SS",
		node.Node{Name: "Legacy SS", Protocol: node.Shadowsocks, Server: "203.0.113.5", Port: 8388,
			Shadowsocks: &node.ShadowsocksOptions{Method: "aes-256-gcm", Password: "legacy-pass"}}},
	{"ss legacy IPv6 no name", "ss://YWVzLTEyOC1nY206cHdAWzIwMDE6ZGI4Ojo1XTo4Mzg4",
		node.Node{Name: "[2001:db8::5]:8388", Protocol: node.Shadowsocks, Server: "2001:db8::5", Port: 8388,
			Shadowsocks: &node.ShadowsocksOptions{Method: "aes-128-gcm", Password: "pw"}}},

	{"ss legacy password with @#: (shadowsocks.org example)", "ss://YWVzLTI1Ni1nY206dGVzdC8hQCM6QDE5Mi4xNjguMTAwLjE6ODg4OA/#Foo%20Bar",
		node.Node{Name: "Foo Bar", Protocol: node.Shadowsocks, Server: "192.168.100.1", Port: 8888,
			Shadowsocks: &node.ShadowsocksOptions{Method: "aes-256-gcm", Password: "test/!@#:"}}},
	{"ss SIP002 spec example with ignored argument", "ss://YWVzLTEyOC1nY206dGVzdA@192.168.100.1:8888/?plugin=v2ray-plugin%3Bserver&unsupported-arguments=should-be-ignored#Dummy+profile+name",
		node.Node{Name: "Dummy+profile+name", Protocol: node.Shadowsocks, Server: "192.168.100.1", Port: 8888,
			Shadowsocks: &node.ShadowsocksOptions{Method: "aes-128-gcm", Password: "test", Plugin: "v2ray-plugin", PluginOpts: "server"}}},

	{"ss udp-over-tcp, Clash's default version", "ss://YWVzLTEyOC1nY206dGVzdA@192.168.100.1:8888/?uot=1#u",
		node.Node{Name: "u", Protocol: node.Shadowsocks, Server: "192.168.100.1", Port: 8888,
			Shadowsocks: &node.ShadowsocksOptions{Method: "aes-128-gcm", Password: "test", UDPOverTCP: true, UDPOverTCPVersion: 1}}},
	{"ss udp-over-tcp version 2 with a plugin", "ss://YWVzLTEyOC1nY206dGVzdA@192.168.100.1:8888/?plugin=obfs-local%3Bobfs%3Dhttp&udp-over-tcp=true&udp-over-tcp-version=2#u",
		node.Node{Name: "u", Protocol: node.Shadowsocks, Server: "192.168.100.1", Port: 8888,
			Shadowsocks: &node.ShadowsocksOptions{Method: "aes-128-gcm", Password: "test", Plugin: "obfs-local", PluginOpts: "obfs=http", UDPOverTCP: true, UDPOverTCPVersion: 2}}},

	// TUIC v5.
	{"tuic full", "tuic://" + testUUID + ":p%40ss@tuic.example.com:443?congestion_control=bbr&udp_relay_mode=native&alpn=h3&sni=tuic.example.com&allow_insecure=1#TUIC%20v5",
		node.Node{Name: "TUIC v5", Protocol: node.TUIC, Server: "tuic.example.com", Port: 443,
			TLS:  &node.TLS{SNI: "tuic.example.com", ALPN: []string{"h3"}, Insecure: true},
			TUIC: &node.TUICOptions{UUID: testUUID, Password: "p@ss", CongestionControl: "bbr", UDPRelayMode: "native"}}},
	{"tuic 0-RTT heartbeat quic mode", "tuic://" + testUUID + ":pw@h.example:443?udp_relay_mode=quic&reduce_rtt=1&heartbeat=5s#t",
		node.Node{Name: "t", Protocol: node.TUIC, Server: "h.example", Port: 443,
			TUIC: &node.TUICOptions{UUID: testUUID, Password: "pw", UDPRelayMode: "quic", ZeroRTT: true, Heartbeat: 5 * time.Second}}},
	{"tuic heartbeat in milliseconds, zero_rtt_handshake", "tuic://" + testUUID + ":pw@h.example:443?zero_rtt_handshake=true&heartbeat=3000#t",
		node.Node{Name: "t", Protocol: node.TUIC, Server: "h.example", Port: 443,
			TUIC: &node.TUICOptions{UUID: testUUID, Password: "pw", ZeroRTT: true, Heartbeat: 3 * time.Second}}},
	{"tuic disable_sni", "tuic://" + testUUID + ":pw@h.example:443?sni=cdn.example&disable_sni=1#t",
		node.Node{Name: "t", Protocol: node.TUIC, Server: "h.example", Port: 443,
			TLS:  &node.TLS{SNI: "cdn.example", NoSNI: true},
			TUIC: &node.TUICOptions{UUID: testUUID, Password: "pw"}}},
	{"tuic IPv6 minimal", "tuic://" + testUUID + ":pw@[2001:db8::3]:8443#",
		node.Node{Name: "[2001:db8::3]:8443", Protocol: node.TUIC, Server: "2001:db8::3", Port: 8443,
			TUIC: &node.TUICOptions{UUID: testUUID, Password: "pw"}}},

	// AnyTLS.
	{"anytls", "anytls://s3cr%3Ft@any.example.com:8443/?sni=any.example.com&insecure=1#AnyTLS",
		node.Node{Name: "AnyTLS", Protocol: node.AnyTLS, Server: "any.example.com", Port: 8443,
			TLS: &node.TLS{SNI: "any.example.com", Insecure: true}, AnyTLS: &node.AnyTLSOptions{Password: "s3cr?t"}}},
	{"anytls default port query password", "anytls://203.0.113.8?password=pw#",
		node.Node{Name: "203.0.113.8:443", Protocol: node.AnyTLS, Server: "203.0.113.8", Port: 443,
			AnyTLS: &node.AnyTLSOptions{Password: "pw"}}},
}

// vmessLink encodes a v2rayN JSON payload.
func vmessLink(enc *base64.Encoding, j string) string {
	return "vmess://" + enc.EncodeToString([]byte(j))
}

// colons writes hex as byte pairs separated by ':'.
func colons(h string) string {
	var b strings.Builder
	for i := 0; i < len(h); i += 2 {
		if i > 0 {
			b.WriteByte(':')
		}
		b.WriteString(h[i : i+2])
	}
	return b.String()
}

func dump(n *node.Node) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestParse(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.link)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if !reflect.DeepEqual(*got, tc.want) {
				t.Fatalf("Parse:\n got %s\nwant %s", dump(got), dump(&tc.want))
			}
		})
	}
}

func TestRoundTrip(t *testing.T) {
	for _, tc := range validCases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse(tc.link)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			s, err := Format(n)
			if err != nil {
				t.Fatalf("Format: %v", err)
			}
			m, err := Parse(s)
			if err != nil {
				t.Fatalf("Parse(Format) %q: %v", s, err)
			}
			if !reflect.DeepEqual(n, m) {
				t.Fatalf("round trip via %q:\n got %s\nwant %s", s, dump(m), dump(n))
			}
			// Format is canonical: printing again gives the same link.
			if s2, _ := Format(m); s2 != s {
				t.Fatalf("Format not stable:\n%s\n%s", s, s2)
			}
		})
	}
}

// badCases are malformed links; the error must name the scheme and field
// and must not contain the secret ("SECRET" or the UUID).
var badCases = []struct {
	name, link, want string
}{
	{"no scheme", "example.com:443", "link: not a share link"},
	{"unknown scheme", "socks5://u:p@example.com:1080", `link: unsupported scheme "socks5"`},
	{"hy2 port out of range", "hysteria2://SECRET@example.com:99999", `link: hysteria2: port: "99999" out of range`},
	{"hy2 port not a number", "hy2://SECRET@example.com:abc/", "link: hysteria2: port: not a number"},
	{"hy2 backwards range", "hy2://SECRET@example.com:443,6000-5000", "link: hysteria2: port: range 6000-5000 is backwards"},
	{"hy2 bad mport", "hy2://SECRET@example.com?mport=70000", `link: hysteria2: mport: "70000" out of range`},
	{"hy2 unknown obfs", "hy2://SECRET@example.com?obfs=xplus&obfs-password=SECRET", `link: hysteria2: obfs: unknown type "xplus"`},
	{"hy2 salamander no password", "hy2://SECRET@example.com?obfs=salamander", "link: hysteria2: obfs-password: empty with obfs=salamander"},
	{"hy2 bad insecure", "hy2://SECRET@example.com?insecure=maybe", `link: hysteria2: insecure: "maybe" not a boolean`},
	{"hy2 bad pin", "hy2://SECRET@example.com?pinSHA256=deadbeef", "link: hysteria2: pinSHA256: want 64 hex digits"},
	{"hy2 bad upmbps", "hy2://SECRET@example.com?upmbps=fast", "link: hysteria2: upmbps: not a number"},
	{"hy2 bad auth escape", "hy2://SEC%zzRET@example.com", "link: hysteria2: userinfo: bad percent-escape"},
	{"hy2 raw IPv6", "hy2://SECRET@2001:db8::1:443", "link: hysteria2: host: IPv6 address must be in brackets"},
	{"hy2 unclosed bracket", "hy2://SECRET@[2001:db8::1:443", "link: hysteria2: host: missing ']'"},
	{"hy2 empty host", "hy2://SECRET@:443", "link: hysteria2: host: empty"},
	{"hy2 bad host char", "hy2://SECRET@exa$mple.com:443", "link: hysteria2: host: invalid character"},
	{"hy2 unicode host", "hy2://SECRET@bücher.example:443", "link: hysteria2: host: not ASCII"},
	{"vless not a uuid", "vless://SECRET@example.com:443?security=tls", "link: vless: uuid: not a UUID"},
	{"vless no uuid", "vless://example.com:443", "link: vless: uuid: missing"},
	{"vless no port", "vless://" + testUUID + "@example.com", "link: vless: port: missing"},
	{"vless port zero", "vless://" + testUUID + "@example.com:0", `link: vless: port: "0" out of range`},
	{"vless bad type", "vless://" + testUUID + "@example.com:443?type=kcp", `link: vless: type: unsupported "kcp"`},
	{"vless bad security", "vless://" + testUUID + "@example.com:443?security=ssl", `link: vless: security: unsupported "ssl"`},
	{"vless xtls", "vless://" + testUUID + "@example.com:443?security=xtls", "link: vless: security: xtls is obsolete"},
	{"vless pq encryption", "vless://" + testUUID + "@example.com:443?encryption=mlkem768x25519plus.native.0rtt.SECRET", "link: vless: encryption: unsupported"},
	{"vless bad flow", "vless://" + testUUID + "@example.com:443?flow=xtls-rprx-direct", `link: vless: flow: unsupported "xtls-rprx-direct"`},
	{"vless reality no pbk", "vless://" + testUUID + "@example.com:443?security=reality&sni=a.com", "link: vless: pbk: empty"},
	{"vless reality bad pbk", "vless://" + testUUID + "@example.com:443?security=reality&pbk=SECRET", "link: vless: pbk: not a base64url X25519 public key"},
	{"vless reality bad sid", "vless://" + testUUID + "@example.com:443?security=reality&pbk=" + testPBK + "&sid=xyz", "link: vless: sid:"},
	{"vless bad headerType", "vless://" + testUUID + "@example.com:443?type=tcp&headerType=srtp", `link: vless: headerType: unsupported "srtp"`},
	{"vless bad query escape", "vless://" + testUUID + "@example.com:443?path=%2", "link: vless: path: bad percent-escape"},
	{"vmess not base64", "vmess://!!!SECRET!!!", "link: vmess: payload: not base64 of a JSON object"},
	{"vmess bad json", vmessLink(base64.StdEncoding, `{"id":"SECRET",`), "link: vmess: payload: bad JSON"},
	{"vmess bad id", vmessLink(base64.StdEncoding, `{"add":"a.com","port":"443","id":"SECRET"}`), "link: vmess: uuid: not a UUID"},
	{"vmess bad port", vmessLink(base64.StdEncoding, `{"add":"a.com","port":"65536","id":"`+testUUID+`"}`), `link: vmess: port: "65536" out of range`},
	{"vmess no add", vmessLink(base64.StdEncoding, `{"port":"443","id":"`+testUUID+`"}`), "link: vmess: add: empty"},
	{"vmess bad net", vmessLink(base64.StdEncoding, `{"add":"a.com","port":"443","id":"`+testUUID+`","net":"kcp"}`), `link: vmess: net: unsupported "kcp"`},
	{"vmess bad scy", vmessLink(base64.StdEncoding, `{"add":"a.com","port":"443","id":"`+testUUID+`","scy":"aes-128-cfb"}`), `link: vmess: scy: unsupported "aes-128-cfb"`},
	{"vmess bad aid", vmessLink(base64.StdEncoding, `{"add":"a.com","port":"443","id":"`+testUUID+`","aid":"x"}`), "link: vmess: aid: not a number"},
	{"ss bad method", "ss://" + base64.RawURLEncoding.EncodeToString([]byte("rc4-md5:SECRET")) + "@example.com:8388", `link: ss: method: unsupported "rc4-md5"`},
	{"ss 2022 bad key", "ss://2022-blake3-aes-256-gcm:SECRET@example.com:8388", "link: ss: password: not base64 of a 32-byte key"},
	{"ss 2022 short key", "ss://2022-blake3-aes-256-gcm:AQIDBAUGBwgJCgsMDQ4PEA%3D%3D@example.com:8388", "link: ss: password: not base64 of a 32-byte key"},
	{"ss empty password", "ss://" + base64.RawURLEncoding.EncodeToString([]byte("aes-128-gcm:")) + "@example.com:8388", "link: ss: password: empty"},
	{"ss userinfo not base64", "ss://SECRET!@example.com:8388", "link: ss: userinfo: neither method:password nor its base64"},
	{"ss no port", "ss://YWVzLTEyOC1nY206dGVzdA@example.com", "link: ss: port: missing"},
	{"ss legacy stream cipher (shadowsocks.org example)", "ss://YmYtY2ZiOnRlc3QvIUAjOkAxOTIuMTY4LjEwMC4xOjg4ODg", `link: ss: method: unsupported "bf-cfb"`},
	{"ss legacy garbage", "ss://SECRET!!", "link: ss: userinfo: no '@' and not base64"},
	{"trojan several pcs", "trojan://SECRET@example.com:443?pcs=" + testPin + "," + testPin, "link: trojan: pcs: several certificate hashes"},
	{"trojan bad pcs", "trojan://SECRET@example.com:443?pcs=abc", "link: trojan: pcs: want 64 hex digits"},
	{"trojan no password", "trojan://example.com:443", "link: trojan: password: empty"},
	{"trojan grpc bad mode", "trojan://SECRET@example.com:443?type=grpc&mode=stream-one", `link: trojan: mode: unsupported "stream-one"`},
	{"trojan bad port", "trojan://SECRET@example.com:-1", "link: trojan: port: not a number"},
	{"tuic bad uuid", "tuic://SECRET:SECRET@example.com:443", "link: tuic: uuid: not a UUID"},
	{"tuic no password", "tuic://" + testUUID + "@example.com:443", "link: tuic: password: empty"},
	{"tuic bad cc", "tuic://" + testUUID + ":SECRET@example.com:443?congestion_control=brutal", `link: tuic: congestion_control: unsupported "brutal"`},
	{"tuic bad relay", "tuic://" + testUUID + ":SECRET@example.com:443?udp_relay_mode=fast", `link: tuic: udp_relay_mode: unsupported "fast"`},
	{"anytls no password", "anytls://example.com:443", "link: anytls: password: empty"},
	{"anytls bad port", "anytls://SECRET@example.com:1e3", "link: anytls: port: not a number"},
}

func TestParseErrors(t *testing.T) {
	for _, tc := range badCases {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse(tc.link)
			if err == nil {
				t.Fatalf("Parse succeeded: %s", dump(n))
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, tc.want) {
				t.Errorf("error %q, want prefix %q", msg, tc.want)
			}
			for _, secret := range []string{"SECRET", "ECRE", testUUID} {
				if strings.Contains(msg, secret) {
					t.Errorf("error %q leaks a secret", msg)
				}
			}
		})
	}
}

func TestFormatErrors(t *testing.T) {
	base := func() *node.Node {
		return &node.Node{Name: "x", Protocol: node.VLESS, Server: "example.com", Port: 443,
			VLESS: &node.VLESSOptions{UUID: testUUID}}
	}
	tests := []struct {
		name string
		mod  func(*node.Node)
		want string
	}{
		{"headers", func(n *node.Node) {
			n.Transport = &node.Transport{Type: node.TransportWS, Headers: map[string]string{"X": "y"}}
		}, "link: vless: headers:"},
		{"early data on grpc", func(n *node.Node) { n.Transport = &node.Transport{Type: node.TransportGRPC, MaxEarlyData: 10} }, "link: vless: maxEarlyData:"},
		{"bad uuid", func(n *node.Node) { n.VLESS.UUID = "SECRET" }, "link: vless: uuid: not a UUID"},
		{"bad host", func(n *node.Node) { n.Server = "a/b" }, "link: vless: host: invalid character"},
		{"IPv6 with zone", func(n *node.Node) { n.Server = "fe80::1%eth0" }, "link: vless: host: not a host name"},
		{"invalid node", func(n *node.Node) { n.Port = 0 }, "link: vless: node: port:"},
		{"reality on hysteria2", func(n *node.Node) {
			n.Protocol, n.VLESS, n.Hysteria2 = node.Hysteria2, nil, &node.Hysteria2Options{}
			n.TLS = &node.TLS{Reality: &node.Reality{PublicKey: testPBK}}
		}, "link: hysteria2: reality:"},
		{"ss plugin opts without plugin", func(n *node.Node) {
			n.Protocol, n.VLESS = node.Shadowsocks, nil
			n.Shadowsocks = &node.ShadowsocksOptions{Method: "aes-128-gcm", Password: "SECRET", PluginOpts: "a=b"}
		}, "link: ss: pluginOpts:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := base()
			tc.mod(n)
			s, err := Format(n)
			if err == nil {
				t.Fatalf("Format succeeded: %s", s)
			}
			if !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error %q, want prefix %q and no secret", err, tc.want)
			}
		})
	}
}

// TestFormatNotParsed prints nodes built by hand (as subscriptions build
// them) and checks that they come back equal.
func TestFormatNotParsed(t *testing.T) {
	nodes := []node.Node{
		{Name: "hop", Protocol: node.Hysteria2, Server: "example.com", Port: 8443,
			Hysteria2: &node.Hysteria2Options{Auth: "a b:c", Ports: "20000-30000"}},
		{Name: "single mport", Protocol: node.Hysteria2, Server: "example.com", Port: 443,
			Hysteria2: &node.Hysteria2Options{Auth: "x", Ports: "443"}},
		{Name: " spaced name ", Protocol: node.VMess, Server: "example.com", Port: 443,
			TLS:   &node.TLS{SNI: "a.example", Insecure: true, PinSHA256: testPin},
			VMess: &node.VMessOptions{UUID: testUUID, Security: "zero"}},
		{Name: "ss none", Protocol: node.Shadowsocks, Server: "example.com", Port: 8388,
			Shadowsocks: &node.ShadowsocksOptions{Method: "none"}},
	}
	for _, want := range nodes {
		s, err := Format(&want)
		if err != nil {
			t.Fatalf("%s: Format: %v", want.Name, err)
		}
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("%s: Parse(%q): %v", want.Name, s, err)
		}
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("%s via %q:\n got %s\nwant %s", want.Name, s, dump(got), dump(&want))
		}
	}
}

func TestParseRemovesControls(t *testing.T) {
	n, err := Parse("trojan://secret@jp.example.com:443?sni=jp.example.com#%1B%5B2J%07%1B%5D0%3Bowned%07%C2%9B31m%E2%80%AEJP%2001%0A")
	if err != nil {
		t.Fatal(err)
	}
	if n.Name != "[2J]0;owned31mJP 01" {
		t.Errorf("name %q", n.Name)
	}
	if n, err := Parse("trojan://secret@jp.example.com:443#%1B%07"); err != nil || n.Name != "jp.example.com:443" {
		t.Errorf("a name of controls only: %v, %q", err, n.Name)
	}
}
