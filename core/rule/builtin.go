package rule

// Names of the built-in rule lists that `skiff run` builds from its flags
// (the window's routing presets are core/preset's).
const (
	// BuiltinTunnelAll sends everything through the tunnel except private
	// and LAN destinations, which go direct. The default.
	BuiltinTunnelAll = "tunnel-all"
	// BuiltinBypassList also sends a user's list of domains and addresses
	// direct.
	BuiltinBypassList = "bypass-list"
)

// Builtin returns the rules of a named built-in list. proxy and direct are the
// targets to use; bypass holds the user's list for BuiltinBypassList (names
// are matched as suffixes, entries that parse as CIDR as addresses).
func Builtin(name, proxy, direct string, bypass []string) ([]Rule, string, bool) {
	lan := Rule{Private: true, Target: direct}
	switch name {
	case "", BuiltinTunnelAll:
		return []Rule{lan}, proxy, true
	case BuiltinBypassList:
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
