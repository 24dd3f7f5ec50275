package link

import "testing"

// TestFormatLinks pins Format's output byte for byte, one case for each
// way a link is written: other clients read these links, so a change in
// them is a change in behaviour even when the round trip still holds.
func TestFormatLinks(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"hy2 port list in the authority", "hysteria2://letmein@example.com:123,5000-6000/?insecure=1&obfs=salamander&obfs-password=gawrgura&sni=real.example.com#hop", "hysteria2://letmein@example.com:123,5000-6000/?obfs=salamander&obfs-password=gawrgura&sni=real.example.com&insecure=1#hop"},
		{"hy2 mport and rates", "hy2://pw@hop.example.net:443?mport=5000-6000&upmbps=50&downmbps=200#hop", "hysteria2://pw@hop.example.net:443/?mport=5000-6000&upmbps=50&downmbps=200#hop"},
		{"hy2 no auth", "hysteria2://example.com:4443/?obfs=none", "hysteria2://example.com:4443/#example.com%3A4443"},
		{"hysteria IPv6", "hysteria://[2001:db8::1]:443?protocol=FakeTCP&upmbps=1&downmbps=1&auth=a%20b#v6", "hysteria://[2001:db8::1]:443?protocol=faketcp&auth=a%20b&upmbps=1&downmbps=1#v6"},
		{"vless grpc IPv6", "vless://" + testUUID + "@[2001:db8::1]:443?encryption=none&flow=xtls-rprx-vision&security=tls&sni=a.example&type=grpc&serviceName=s#g%20rpc", "vless://b831381d-6324-4d53-ad4f-8cda48b30811@[2001:db8::1]:443?encryption=none&flow=xtls-rprx-vision&security=tls&sni=a.example&type=grpc&serviceName=s&mode=gun#g%20rpc"},
		{"trojan ws", "trojan://p%40ss@t.example.com?type=ws&path=%2Ftr#tr", "trojan://p%40ss@t.example.com:443?security=tls&type=ws&path=%2Ftr#tr"},
		{"vmess", "vmess://" + testUUID + "@example.com:443?encryption=chacha20-poly1305&security=tls&type=ws&path=%2Fv#url", "vmess://eyJ2IjoiMiIsInBzIjoidXJsIiwiYWRkIjoiZXhhbXBsZS5jb20iLCJwb3J0IjoiNDQzIiwiaWQiOiJiODMxMzgxZC02MzI0LTRkNTMtYWQ0Zi04Y2RhNDhiMzA4MTEiLCJhaWQiOiIwIiwic2N5IjoiY2hhY2hhMjAtcG9seTEzMDUiLCJuZXQiOiJ3cyIsInR5cGUiOiJub25lIiwiaG9zdCI6IiIsInBhdGgiOiIvdiIsInRscyI6InRscyIsInNuaSI6IiIsImFscG4iOiIiLCJmcCI6IiJ9"},
		{"ss no query", "ss://YWVzLTI1Ni1nY206MA@example.com:8388#n", "ss://YWVzLTI1Ni1nY206MA@example.com:8388#n"},
		{"ss plugin", "ss://YWVzLTI1Ni1nY206MA@[2001:db8::7]:8388/?plugin=obfs-local%3Bobfs%3Dhttp#p", "ss://YWVzLTI1Ni1nY206MA@[2001:db8::7]:8388/?plugin=obfs-local%3Bobfs%3Dhttp#p"},
		{"ss 2022", "ss://2022-blake3-aes-128-gcm:AQIDBAUGBwgJCgsMDQ4PEA%3D%3D@example.com:8388?udp-over-tcp=1#s", "ss://2022-blake3-aes-128-gcm:AQIDBAUGBwgJCgsMDQ4PEA%3D%3D@example.com:8388/?udp-over-tcp=true#s"},
		{"tuic", "tuic://" + testUUID + ":p%40ss@tuic.example.com:443?congestion_control=bbr&udp_relay_mode=native&alpn=h3&sni=tuic.example.com&allow_insecure=1&disable_sni=1&heartbeat=3000#TUIC%20v5", "tuic://b831381d-6324-4d53-ad4f-8cda48b30811:p%40ss@tuic.example.com:443?congestion_control=bbr&udp_relay_mode=native&heartbeat=3s&sni=tuic.example.com&alpn=h3&allow_insecure=1&disable_sni=1#TUIC%20v5"},
		{"anytls password in the query", "anytls://203.0.113.8?password=pw#", "anytls://pw@203.0.113.8:443/#203.0.113.8%3A443"},
		{"ssh private key", "ssh://git@example.com?pk=" + escape(testKeyBody) + "#g", "ssh://git@example.com:22?pk=b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW%2BQyNTUxOQ#g"},
		{"ssh password and host key", "ssh://root:p%40ss@198.51.100.9:2222?hk=" + escape(testHostKey) + "#box", "ssh://root:p%40ss@198.51.100.9:2222?hk=ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl#box"},
		{"wireguard", "wireguard://" + wgPrivEsc + "@engage.cloudflareclient.com:2408/?publickey=" + wgPubEsc + "&reserved=168%2C26%2C21&address=172.16.0.2%2F32&mtu=1280#WARP", "wireguard://yAnz5TF%2BlXXJte14tji3zlMNq%2Bhd2rYUIgJBgB3fBmk%3D@engage.cloudflareclient.com:2408/?publickey=bmXOC%2BF1FxEMF9dyiK2H5%2F1SUtzH0JuVo51h2wPfgyo%3D&address=172.16.0.2%2F32&mtu=1280&reserved=168%2C26%2C21#WARP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse(tc.in)
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := Format(n)
			if err != nil {
				t.Fatalf("Format: %v", err)
			}
			if got != tc.want {
				t.Errorf("Format:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
