package subscription

import (
	"encoding/base64"
	"encoding/pem"
	"errors"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// clashECH is mihomo's ech-opts: without config, the config is looked up
// in the HTTPS record of query-server-name (else the SNI).
type clashECH struct {
	Enable          bool   `yaml:"enable"`
	Config          string `yaml:"config"` // base64 ECHConfigList
	QueryServerName string `yaml:"query-server-name"`
}

func (c *clashECH) node() (*node.ECH, error) {
	if c == nil || !c.Enable {
		return nil, nil
	}
	e := &node.ECH{QueryServerName: strings.TrimSpace(c.QueryServerName)}
	if s := strings.Join(strings.Fields(c.Config), ""); s != "" {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return nil, errors.New("ech-opts: config: not base64")
		}
		e.Config = b
	}
	return e, nil
}

// sbECH is sing-box's tls.ech: config is the PEM "ECH CONFIGS" block,
// as lines or one string; without it, the HTTPS record of
// query_server_name (else server_name) holds it.
type sbECH struct {
	Enabled         bool     `json:"enabled"`
	Config          listable `json:"config"`
	ConfigPath      string   `json:"config_path"`
	QueryServerName string   `json:"query_server_name"`
}

func (s *sbECH) node() (*node.ECH, error) {
	if s == nil || !s.Enabled {
		return nil, nil
	}
	e := &node.ECH{QueryServerName: strings.TrimSpace(s.QueryServerName)}
	if len(s.Config) > 0 {
		block, _ := pem.Decode([]byte(strings.Join(s.Config, "\n")))
		if block == nil || block.Type != "ECH CONFIGS" {
			return nil, errors.New(`tls.ech.config: want a PEM "ECH CONFIGS" block`)
		}
		e.Config = block.Bytes
	} else if s.ConfigPath != "" {
		// A file on the provider's machine: refused rather than read as
		// "look it up in DNS".
		return nil, errors.New("tls.ech.config_path: a local file cannot be imported; put the config in tls.ech.config")
	}
	return e, nil
}
