package link

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
)

const (
	testHostKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
	// A key whose base64 has a '+', and a comment.
	testHostKeyPlus = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINzaOO3l5g8xkw9yn2q+wqZCtSuTaVaw7TMfUBeyehKN me@host"
	testKeyBody     = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW+QyNTUxOQ"
)

func TestSSHLinks(t *testing.T) {
	pem := opensshKeyBegin + "\n" + testKeyBody + "\n" + opensshKeyEnd + "\n"
	for _, tc := range []struct {
		name, link string
		want       node.Node
	}{
		{"password and host key", "ssh://root:p%40ss@198.51.100.9:2222?hk=" + escape(testHostKey) + "#box",
			node.Node{Name: "box", Protocol: node.SSH, Server: "198.51.100.9", Port: 2222,
				SSH: &node.SSHOptions{User: "root", Password: "p@ss", HostKeys: []string{testHostKey}}}},
		{"key, default port, two host keys, unescaped plus", "ssh://git@example.com?pk=" + strings.ReplaceAll(testKeyBody, "+", "%2B") + ",second&hk=" + strings.ReplaceAll(testHostKey, " ", "+") + "," + strings.ReplaceAll(testHostKeyPlus, " ", "+") + "#",
			node.Node{Name: "example.com:22", Protocol: node.SSH, Server: "example.com", Port: 22,
				SSH: &node.SSHOptions{User: "git", PrivateKey: pem, HostKeys: []string{testHostKey, testHostKeyPlus}}}},
		{"whole PEM in pk", "ssh://u:pw@[2001:db8::1]:22?pk=" + escape(opensshKeyBegin+"\n"+testKeyBody[:30]+"\n"+testKeyBody[30:]+"\n"+opensshKeyEnd),
			node.Node{Name: "[2001:db8::1]:22", Protocol: node.SSH, Server: "2001:db8::1", Port: 22,
				SSH: &node.SSHOptions{User: "u", Password: "pw", PrivateKey: pem}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := Parse(tc.link)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*n, tc.want) {
				t.Fatalf("got  %s\nwant %s", dump(n), dump(&tc.want))
			}
			checkRoundTrip(t, tc.link)
		})
	}
	for _, tc := range []struct{ name, link, want string }{
		{"no user", "ssh://:pw@example.com", "link: ssh: user: missing"},
		{"no credentials", "ssh://root@example.com?hk=x", "no password and no private key"},
		{"RSA PEM", "ssh://root@example.com?pk=" + escape("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----"), "pk: not an OpenSSH private key"},
		{"pk not base64", "ssh://0@example.com:22?pk=" + escape("-----BEG\nIN0"), "pk: not the base64 of an OpenSSH private key"}, // found by FuzzSSHLink
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.link)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse: %v, want %q", err, tc.want)
			}
		})
	}
	// What the link cannot carry is an error, not dropped.
	n := &node.Node{Protocol: node.SSH, Server: "example.com", Port: 22, SSH: &node.SSHOptions{User: "u", Password: "p", ClientVersion: "SSH-2.0-x"}}
	if _, err := Format(n); err == nil {
		t.Fatal("Format dropped the client version")
	}
}

// FuzzSSHLink fuzzes ssh:// links' user info and query.
func FuzzSSHLink(f *testing.F) {
	f.Add("root:pw", "hk="+escape(testHostKey))
	f.Add("git", "pk="+testKeyBody+"&hk=a+b+c,d")
	f.Add("u:p", "pk="+escape(opensshKeyBegin+"\nAB CD\n"+opensshKeyEnd))
	f.Fuzz(func(t *testing.T, userinfo, query string) {
		checkRoundTrip(t, "ssh://"+userinfo+"@example.com:22?"+query+"#n")
	})
}
