package subscription

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/profile"
)

// sip008Server is one entry of SIP008's servers list.
type sip008Server struct {
	ID         string `json:"id"`
	Remarks    string `json:"remarks"`
	Server     string `json:"server"`
	ServerPort uint16 `json:"server_port"`
	Password   string `json:"password"`
	Method     string `json:"method"`
	Plugin     string `json:"plugin"`
	PluginOpts string `json:"plugin_opts"`
}

// parseSIP008 maps a SIP008 document (Shadowsocks online configuration
// delivery) to Shadowsocks nodes; its traffic figures become UserInfo.
func parseSIP008(body []byte, res *Result) error {
	var doc struct {
		Version        int               `json:"version"`
		Servers        []json.RawMessage `json:"servers"`
		BytesUsed      *int64            `json:"bytes_used"`
		BytesRemaining *int64            `json:"bytes_remaining"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return jsonError(body, err)
	}
	if doc.Version > 1 {
		res.warn(0, fmt.Sprintf("SIP008 version %d is newer than 1; reading it as version 1", doc.Version))
	}
	if doc.BytesUsed != nil || doc.BytesRemaining != nil {
		ui := &profile.UserInfo{}
		if doc.BytesUsed != nil {
			ui.Download = max(*doc.BytesUsed, 0)
		}
		if doc.BytesRemaining != nil {
			ui.Total = ui.Download + max(*doc.BytesRemaining, 0)
		}
		res.UserInfo = ui
	}
	// Each server's line: find where its raw text starts in the body.
	search := 0
	for _, raw := range doc.Servers {
		line := 0
		if i := bytes.Index(body[search:], bytes.TrimSpace(raw)); i >= 0 && len(raw) > 0 {
			line = lineAt(body, int64(search+i))
			search += i + 1
		}
		var s sip008Server
		if err := json.Unmarshal(raw, &s); err != nil {
			res.warn(line, "invalid server: "+jsonFieldError(err))
			continue
		}
		n, err := s.node()
		res.add(line, n, err)
	}
	return nil
}

func (s *sip008Server) node() (*node.Node, error) {
	name := s.Remarks
	if name == "" {
		name = s.ID
	}
	if s.Method == "" {
		return nil, fmt.Errorf("server %q: method: missing", name)
	}
	if s.Password == "" {
		return nil, fmt.Errorf("server %q: password: missing", name)
	}
	n := &node.Node{
		Name: strings.TrimSpace(s.Remarks), Protocol: node.Shadowsocks,
		Server: strings.Trim(s.Server, "[]"), Port: s.ServerPort,
		Shadowsocks: &node.ShadowsocksOptions{Method: s.Method, Password: s.Password, Plugin: s.Plugin, PluginOpts: s.PluginOpts},
	}
	if n.Name == "" {
		n.Name = n.Address()
	}
	if err := n.Validate(); err != nil {
		return nil, fmt.Errorf("server %q: %w", name, err)
	}
	if n.Server == "" {
		return nil, errors.New("server: missing")
	}
	return n, nil
}
