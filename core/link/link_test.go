package link

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

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
	{"hy2 IPv6 multi-port", "hysteria2://pw@[2001:db8::1]:443,8443,20000-30000/?obfs=salamander&obfs-password=o%2Bbf#v6",
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
	{"vless httpupgrade plain", "vless://" + testUUID + "@example.com:80?encryption=none&security=none&type=httpupgrade&host=h.example.com&path=%2Fup#",
		node.Node{Name: "example.com:80", Protocol: node.VLESS, Server: "example.com", Port: 80,
			Transport: &node.Transport{Type: node.TransportHTTPUpgrade, Host: "h.example.com", Path: "/up"},
			VLESS:     &node.VLESSOptions{UUID: testUUID, Encryption: "none"}}},
	{"vless h2", "vless://" + testUUID + "@example.com:443?security=tls&type=http&host=a.example.com&path=%2Fh2#h2",
		node.Node{Name: "h2", Protocol: node.VLESS, Server: "example.com", Port: 443,
			TLS:       &node.TLS{},
			Transport: &node.Transport{Type: node.TransportH2, Host: "a.example.com", Path: "/h2"},
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
