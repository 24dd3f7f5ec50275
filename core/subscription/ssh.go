package subscription

import (
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// clashSSH is mihomo's type: ssh fields (Meta-Docs ssh.en.md).
type clashSSH struct {
	Username             string   `yaml:"username"`
	PrivateKey           string   `yaml:"private-key"` // PEM, or a file path (refused by the outbound)
	PrivateKeyPassphrase string   `yaml:"private-key-passphrase"`
	HostKey              []string `yaml:"host-key"`
	HostKeyAlgorithms    []string `yaml:"host-key-algorithms"`
}

func (cp *clashProxy) sshNode(n *node.Node) *node.Node {
	n.Protocol = node.SSH
	if n.Port == 0 {
		n.Port = 22
	}
	n.SSH = &node.SSHOptions{User: cp.Username, Password: cp.Password, PrivateKey: cp.PrivateKey,
		PrivateKeyPassphrase: cp.PrivateKeyPassphrase, HostKeys: cp.HostKey, HostKeyAlgorithms: cp.HostKeyAlgorithms}
	return n
}

// sbSSH is sing-box's ssh outbound fields (option/ssh.go).
type sbSSH struct {
	User                 string   `json:"user"`
	PrivateKey           listable `json:"private_key"` // the PEM's lines, or the whole PEM
	PrivateKeyPath       string   `json:"private_key_path"`
	PrivateKeyPassphrase string   `json:"private_key_passphrase"`
	HostKey              listable `json:"host_key"`
	HostKeyAlgorithms    listable `json:"host_key_algorithms"`
	ClientVersion        string   `json:"client_version"`
}

func (o *sbOutbound) sshNode(n *node.Node) *node.Node {
	n.Protocol = node.SSH
	if n.Port == 0 {
		n.Port = 22 // sing-box's default
	}
	key := strings.Join(o.PrivateKey, "\n")
	if key == "" {
		// Kept, so that the outbound says it reads no file.
		key = o.PrivateKeyPath
	}
	n.SSH = &node.SSHOptions{User: o.User, Password: o.Password, PrivateKey: key, PrivateKeyPassphrase: o.PrivateKeyPassphrase,
		HostKeys: o.HostKey, HostKeyAlgorithms: o.HostKeyAlgorithms, ClientVersion: o.ClientVersion}
	return n
}
