package ruleset

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/oschwald/maxminddb-golang/v2"
)

// FormatGeoIP is the format prefix of a GeoIP database in MaxMind's mmdb
// format (GeoLite2-Country, or the Country.mmdb that Clash and v2ray users
// fetch), followed by the countries the set stands for: "geoip:cn" or
// "geoip:cn,hk".
const FormatGeoIP = "geoip:"

// maxGeoIPNetworks bounds the networks read from a database.
const maxGeoIPNetworks = 4 << 20

// ParseGeoIP returns the Set of the addresses that db places in one of
// countries (ISO 3166 codes, any case). The networks are copied into
// ranges when the database is read, so a flow's lookup is the binary
// search of any address list, and the database itself is not kept.
func ParseGeoIP(db []byte, countries ...string) (*Set, error) {
	if len(db) > MaxSize*4 { // country databases are about 10 MB; city ones are not meant here
		return nil, fmt.Errorf("ruleset: geoip: %d bytes is more than a country database can be", len(db))
	}
	want := map[string]bool{}
	for _, c := range countries {
		if c = strings.ToUpper(strings.TrimSpace(c)); c != "" {
			want[c] = true
		}
	}
	if len(want) == 0 {
		return nil, errors.New("ruleset: geoip: no country given")
	}
	r, err := maxminddb.OpenBytes(db)
	if err != nil {
		return nil, fmt.Errorf("ruleset: geoip: %w", err)
	}
	defer r.Close()
	var sp spec
	var iso string
	visited := 0
	for res := range r.Networks() {
		// A real country database has under a million networks. A
		// malformed one can describe a tree whose nodes share children, with
		// more networks than could be walked in a lifetime (maxminddb's own
		// Verify walks it the same way, so it is no guard); this bound
		// refuses it within about a second.
		if visited++; visited > maxGeoIPNetworks {
			return nil, fmt.Errorf("ruleset: geoip: more than %d networks: not a country database", maxGeoIPNetworks)
		}
		if err := res.Err(); err != nil {
			return nil, fmt.Errorf("ruleset: geoip: %w", err)
		}
		iso = ""
		if err := res.DecodePath(&iso, "country", "iso_code"); err != nil {
			return nil, fmt.Errorf("ruleset: geoip: network %v: %w", res.Prefix(), err)
		}
		if !want[strings.ToUpper(iso)] {
			continue
		}
		p := res.Prefix()
		if a := p.Addr(); a.Is4In6() {
			p = netip.PrefixFrom(a.Unmap(), max(p.Bits()-96, 0))
		}
		sp.ips = append(sp.ips, p)
	}
	if len(sp.ips) == 0 {
		return nil, fmt.Errorf("ruleset: geoip: the database has no network of %s", strings.Join(countries, ", "))
	}
	return build([]spec{sp}, nil)
}
