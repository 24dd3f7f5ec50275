package link

import (
	"encoding/base64"
	"strings"

	"github.com/skiffvpn/skiff/core/node"
)

// echParam reads ech= as Xray, v2rayN and 3x-ui write it: a base64
// ECHConfigList; a DNS server to look the config up with
// ("https://1.1.1.1/dns-query", or "name+https://…" to query the HTTPS
// record of name rather than the SNI), never base64-decoded; or a short
// flag (5 characters at most, as Hiddify reads it: "1", "true") meaning
// ECH with the config from the system's DNS. Empty: no ECH.
func echParam(scheme, v string) (*node.ECH, error) {
	v = strings.TrimSpace(v)
	switch {
	case v == "":
		return nil, nil
	case strings.Contains(v, "://"):
		e := &node.ECH{DNS: v}
		if name, dns, ok := strings.Cut(v, "+"); ok && !strings.Contains(name, "://") {
			if name == "" {
				return nil, errf(scheme, "ech", "empty name before +")
			}
			e.QueryServerName, e.DNS = name, dns
		}
		return e, nil
	case len(v) <= 5:
		switch strings.ToLower(v) {
		case "0", "false", "none", "off":
			return nil, nil
		}
		return &node.ECH{}, nil
	}
	// A query string may turn + into a space; both alphabets appear.
	v = strings.NewReplacer(" ", "+", "-", "+", "_", "/").Replace(strings.TrimRight(v, "="))
	b, err := base64.RawStdEncoding.DecodeString(v)
	// A list holds its length and at least one config's version and
	// length: shorter is no list (and would print as a flag).
	if err != nil || len(b) < 6 {
		return nil, errf(scheme, "ech", "not a base64 ECHConfigList nor a DNS server URL")
	}
	return &node.ECH{Config: b}, nil
}

// addECH writes what echParam reads.
func addECH(scheme string, q *query, e *node.ECH) error {
	v, err := echValue(scheme, e)
	q.addNonEmpty("ech", v)
	return err
}

// echValue is ech='s value for e ("" for nil). ECH from the system's DNS
// has no form Xray reads, so it is an error rather than a link without ECH.
func echValue(scheme string, e *node.ECH) (string, error) {
	switch {
	case e == nil:
		return "", nil
	case len(e.Config) > 0:
		return base64.StdEncoding.EncodeToString(e.Config), nil
	case e.DNS != "" && e.QueryServerName != "":
		return e.QueryServerName + "+" + e.DNS, nil
	case e.DNS != "":
		return e.DNS, nil
	}
	return "", errf(scheme, "ech", "ECH with its config from the system's DNS has no share-link form")
}
