package link

import (
	"encoding/base64"
	"strings"

	"golang.org/x/crypto/ssh"

	"github.com/skiffvpn/skiff/core/node"
)

const schemeSSH = "ssh"

// OpenSSH's private key armour, which Hiddify's ssh:// link leaves out of
// its pk parameter.
const (
	opensshKeyBegin = "-----BEGIN OPENSSH PRIVATE KEY-----"
	opensshKeyEnd   = "-----END OPENSSH PRIVATE KEY-----"
)

// parseSSH reads Hiddify's ssh://user:password@host:port?pk=…&hk=…#name
// (ray2sing ssh.go): pk is the base64 body of OpenSSH private keys (comma
// separated; Skiff uses the first), hk the pinned host keys as
// authorized_keys lines, comma separated. The port defaults to 22.
func parseSSH(u *uri) (*node.Node, error) {
	s := u.scheme
	user, password, _ := strings.Cut(u.user, ":")
	if user == "" {
		return nil, errf(s, "user", "missing")
	}
	port, err := parsePort(s, u.port, 22)
	if err != nil {
		return nil, err
	}
	o := &node.SSHOptions{User: user, Password: password}
	if pk := strings.TrimSpace(u.query.get("pk")); pk != "" {
		first, _, _ := strings.Cut(pk, ",")
		if o.PrivateKey, err = sshKeyPEM(first); err != nil {
			return nil, err
		}
	}
	for _, hk := range splitList(u.query.get("hk")) {
		o.HostKeys = append(o.HostKeys, sshHostKey(hk))
	}
	if o.Password == "" && o.PrivateKey == "" {
		return nil, errf(s, "password", "no password and no private key (pk)")
	}
	return &node.Node{Name: u.name(), Protocol: node.SSH, Server: u.host, Port: port, SSH: o}, nil
}

// sshKeyPEM arms a pk value as an OpenSSH PEM key. A value that is
// already an OpenSSH PEM key is taken too; a '+' of the base64 that a link
// left unescaped, and so read as a space, is put back.
func sshKeyPEM(v string) (string, error) {
	body := strings.Join(strings.Fields(strings.ReplaceAll(strings.TrimSpace(v), " ", "+")), "")
	if strings.Contains(v, "-----BEGIN") {
		var ok bool
		if body, ok = opensshKeyBody(v); !ok {
			return "", errf(schemeSSH, "pk", "not an OpenSSH private key")
		}
	}
	if body == "" {
		return "", errf(schemeSSH, "pk", "empty")
	}
	if strings.Trim(body, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=") != "" {
		return "", errf(schemeSSH, "pk", "not the base64 of an OpenSSH private key")
	}
	return opensshKeyBegin + "\n" + body + "\n" + opensshKeyEnd + "\n", nil
}

// sshHostKey puts back the '+' of a host key's base64 that a link left
// unescaped, and so read as spaces ("ssh-ed25519 AAAA…[ comment]"): the
// run of fields after the type that joins into a whole public key is the
// key, the rest its comment. A value that is no key is kept as it is,
// for the outbound to refuse.
func sshHostKey(v string) string {
	f := strings.Fields(v)
	if len(f) < 3 {
		return v
	}
	for k := 2; k <= len(f); k++ {
		key := strings.Join(f[1:k], "+")
		blob, err := base64.StdEncoding.DecodeString(key)
		if err != nil {
			continue
		}
		if _, err := ssh.ParsePublicKey(blob); err == nil {
			return strings.Join(append([]string{f[0], key}, f[k:]...), " ")
		}
	}
	return v
}

func formatSSH(n *node.Node) (string, error) {
	const s = schemeSSH
	o := n.SSH
	if o.User == "" || strings.Contains(o.User, ":") {
		return "", errf(s, "user", "empty or holds ':'")
	}
	if o.PrivateKeyPassphrase != "" || o.ClientVersion != "" || len(o.HostKeyAlgorithms) > 0 {
		return "", errf(s, "", "the link cannot carry a key passphrase, client version or host key algorithms")
	}
	var q query
	if o.PrivateKey != "" {
		body, ok := opensshKeyBody(o.PrivateKey)
		if !ok {
			return "", errf(s, "pk", "only an OpenSSH-format private key fits in the link")
		}
		q.add("pk", body)
	}
	for _, hk := range o.HostKeys {
		if strings.Contains(hk, ",") {
			return "", errf(s, "hk", "a host key with a comma does not fit in the link")
		}
	}
	if len(o.HostKeys) > 0 {
		q.add("hk", strings.Join(o.HostKeys, ","))
	}
	userinfo := escape(o.User)
	if o.Password != "" {
		userinfo += ":" + escape(o.Password)
	}
	return joinURI(s, userinfo, n, "", "", &q), nil
}

// opensshKeyBody returns the base64 between an OpenSSH key's armour lines,
// without line breaks.
func opensshKeyBody(pem string) (string, bool) {
	pem = strings.TrimSpace(pem)
	if len(pem) < len(opensshKeyBegin)+len(opensshKeyEnd) || !strings.HasPrefix(pem, opensshKeyBegin) || !strings.HasSuffix(pem, opensshKeyEnd) {
		return "", false
	}
	body := pem[len(opensshKeyBegin) : len(pem)-len(opensshKeyEnd)]
	return strings.Join(strings.Fields(body), ""), true
}
