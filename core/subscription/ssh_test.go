package subscription

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/protocol"
)

const testSSHHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINzaOO3l5g8xkw9yn2q+wqZCtSuTaVaw7TMfUBeyehKN"

// TestSSHFields: Clash's and sing-box's ssh proxies become SSH nodes with
// every field; one without a pinned host key, or with a key file path, is
// kept but greyed with the reason.
func TestSSHFields(t *testing.T) {
	clash := `proxies:
  - {name: s, type: ssh, server: s.example.com, port: 2222, username: root, password: pw, host-key: ["` + testSSHHostKey + `"], host-key-algorithms: [ssh-ed25519]}
  - {name: open, type: ssh, server: o.example.com, port: 22, username: root, password: pw}
  - {name: path, type: ssh, server: p.example.com, username: root, private-key: ~/.ssh/id_ed25519, host-key: ["` + testSSHHostKey + `"]}
`
	singbox := `{"outbounds": [
  {"type": "ssh", "tag": "s", "server": "s.example.com", "server_port": 2222, "user": "root", "password": "pw", "host_key": ["` + testSSHHostKey + `"], "host_key_algorithms": "ssh-ed25519", "client_version": "SSH-2.0-OpenSSH_9.2"},
  {"type": "ssh", "tag": "open", "server": "o.example.com", "user": "root", "password": "pw"},
  {"type": "ssh", "tag": "path", "server": "p.example.com", "user": "root", "private_key_path": "$HOME/.ssh/id_ed25519", "host_key": "` + testSSHHostKey + `"}
]}`
	for name, doc := range map[string]string{"clash": clash, "sing-box": singbox} {
		res, err := Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Nodes) != 3 {
			t.Fatalf("%s: %d nodes (%v)", name, len(res.Nodes), res.Warnings)
		}
		want := &node.SSHOptions{User: "root", Password: "pw", HostKeys: []string{testSSHHostKey}, HostKeyAlgorithms: []string{"ssh-ed25519"}}
		if name == "sing-box" {
			want.ClientVersion = "SSH-2.0-OpenSSH_9.2"
		}
		n := res.Nodes[0]
		if n.Protocol != node.SSH || n.Port != 2222 || !reflect.DeepEqual(n.SSH, want) {
			t.Errorf("%s: %s %d %+v, want %+v", name, n.Protocol, n.Port, n.SSH, want)
		}
		if ok, why := protocol.Supported(n); !ok {
			t.Errorf("%s: pinned node unusable: %s", name, why)
		}
		if ok, why := protocol.Supported(res.Nodes[1]); ok || !strings.Contains(why, "none pinned") {
			t.Errorf("%s: node without host key: %v %q", name, ok, why)
		}
		if res.Nodes[2].Port != 22 {
			t.Errorf("%s: default port %d", name, res.Nodes[2].Port)
		}
		if ok, why := protocol.Supported(res.Nodes[2]); ok || !strings.Contains(why, "file path is not read") {
			t.Errorf("%s: key path: %v %q", name, ok, why)
		}
	}
}
