package rule

// Preset names.
const (
	// PresetTunnelAll sends everything through the tunnel except private
	// and LAN destinations, which go direct. The default.
	PresetTunnelAll = "tunnel-all"
	// PresetBypassList also sends a user's list of domains and addresses
	// direct.
	PresetBypassList = "bypass-list"
)

// Preset returns the rules of a named preset. proxy and direct are the
// targets to use; bypass holds the user's list for PresetBypassList (names
// are matched as suffixes, entries that parse as CIDR as addresses).
func Preset(name, proxy, direct string, bypass []string) ([]Rule, string, bool) {
	lan := Rule{Private: true, Target: direct}
	switch name {
	case "", PresetTunnelAll:
		return []Rule{lan}, proxy, true
	case PresetBypassList:
		r := Rule{Target: direct}
		for _, b := range bypass {
			if p, err := parsePrefix(b); err == nil {
				r.IPCIDR = append(r.IPCIDR, p)
			} else if b != "" {
				r.DomainSuffix = append(r.DomainSuffix, b)
			}
		}
		rules := []Rule{lan}
		if len(r.IPCIDR)+len(r.DomainSuffix) > 0 {
			rules = append(rules, r)
		}
		return rules, proxy, true
	}
	return nil, "", false
}
