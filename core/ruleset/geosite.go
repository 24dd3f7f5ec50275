package ruleset

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
)

// FormatGeoSite is the format prefix of a v2ray geosite.dat file, followed
// by the lists the set stands for: "geosite:cn", or "geosite:google,github";
// "name@attr" keeps the entries of list name that carry attribute attr
// ("geosite:category-ads-all@ads").
const FormatGeoSite = "geosite:"

// The fields of v2ray's routercommon.proto that geosite.dat uses:
//
//	GeoSiteList { repeated GeoSite entry = 1; }
//	GeoSite     { string country_code = 1; repeated Domain domain = 2; }
//	Domain      { Type type = 1; string value = 2; repeated Attribute attribute = 3; }
//	Attribute   { string key = 1; oneof { bool bool_value = 2; int64 int_value = 3; } }
//	Type        { Plain = 0 (keyword); Regex = 1; Domain = 2 (the name and below); Full = 3 }
const (
	geoSiteListEntry   = 1
	geoSiteCode        = 1
	geoSiteDomain      = 2
	domainType         = 1
	domainValue        = 2
	domainAttribute    = 3
	attributeKey       = 1
	domainTypePlain    = 0
	domainTypeRegex    = 1
	domainTypeDomain   = 2
	domainTypeFull     = 3
	geoSiteAnyAttr     = ""
	geoSiteMaxSelected = 64
)

// ParseGeoSite returns the Set of the domains that the geosite.dat in data
// lists under the given names (case-insensitive), each optionally
// "name@attribute".
func ParseGeoSite(data []byte, lists ...string) (*Set, error) {
	if len(data) > MaxSize*4 { // the full geosite.dat is about 10 MB
		return nil, fmt.Errorf("ruleset: geosite: %d bytes is more than a geosite file can be", len(data))
	}
	want := map[string][]string{} // list code → attributes asked for ("" any)
	for _, l := range lists {
		code, attr, _ := strings.Cut(strings.ToLower(strings.TrimSpace(l)), "@")
		if code == "" {
			continue
		}
		want[code] = append(want[code], attr)
	}
	if len(want) == 0 || len(want) > geoSiteMaxSelected {
		return nil, fmt.Errorf("ruleset: geosite: %d lists asked for; give 1 to %d", len(want), geoSiteMaxSelected)
	}
	var sp spec
	found := map[string]bool{}
	err := eachField(data, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != geoSiteListEntry || typ != protowire.BytesType {
			return nil
		}
		return parseGeoSite(v, want, found, &sp)
	})
	if err != nil {
		return nil, fmt.Errorf("ruleset: geosite: %w", err)
	}
	for code := range want {
		if !found[code] {
			return nil, fmt.Errorf("ruleset: geosite: no list %q in the file", code)
		}
	}
	return build([]spec{sp}, nil)
}

// parseGeoSite adds one GeoSite message's domains to sp if its code is
// wanted.
func parseGeoSite(msg []byte, want map[string][]string, found map[string]bool, sp *spec) error {
	var code string
	var domains [][]byte
	err := eachField(msg, func(num protowire.Number, typ protowire.Type, v []byte) error {
		switch {
		case num == geoSiteCode && typ == protowire.BytesType:
			code = strings.ToLower(string(v))
		case num == geoSiteDomain && typ == protowire.BytesType:
			domains = append(domains, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	attrs, ok := want[code]
	if !ok {
		return nil
	}
	found[code] = true
	for _, d := range domains {
		if err := addGeoSiteDomain(d, attrs, sp); err != nil {
			return fmt.Errorf("list %q: %w", code, err)
		}
	}
	return nil
}

func addGeoSiteDomain(msg []byte, attrs []string, sp *spec) error {
	var typ uint64
	var value string
	var has []string
	err := eachField(msg, func(num protowire.Number, wt protowire.Type, v []byte) error {
		switch {
		case num == domainType && wt == protowire.VarintType:
			typ, _ = protowire.ConsumeVarint(v)
		case num == domainValue && wt == protowire.BytesType:
			value = string(v)
		case num == domainAttribute && wt == protowire.BytesType:
			return eachField(v, func(num protowire.Number, wt protowire.Type, v []byte) error {
				if num == attributeKey && wt == protowire.BytesType {
					has = append(has, strings.ToLower(string(v)))
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !attrMatch(attrs, has) {
		return nil
	}
	switch typ {
	case domainTypePlain:
		if value != "" {
			sp.keywords = append(sp.keywords, strings.ToLower(value))
		}
	case domainTypeRegex:
		sp.regexps = append(sp.regexps, value)
	case domainTypeDomain, domainTypeFull:
		n := normName(value)
		if n == "" {
			return fmt.Errorf("%q is not a domain name", value)
		}
		if typ == domainTypeFull {
			sp.exact = append(sp.exact, n)
		} else {
			sp.suffix = append(sp.suffix, n)
		}
	default:
		return fmt.Errorf("domain type %d is not known", typ)
	}
	return nil
}

// attrMatch reports whether a domain with attributes has is selected by
// one of attrs ("" selects every domain).
func attrMatch(attrs, has []string) bool {
	for _, a := range attrs {
		if a == geoSiteAnyAttr {
			return true
		}
		for _, h := range has {
			if h == a {
				return true
			}
		}
	}
	return false
}

// eachField calls f for every field of the protobuf message b; for a
// varint field v holds the varint's bytes, for a bytes field its content.
// Groups and truncated fields are errors.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("malformed field: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.VarintType:
			_, m := protowire.ConsumeVarint(b)
			if m < 0 {
				return fmt.Errorf("malformed varint: %w", protowire.ParseError(m))
			}
			v, b = b[:m], b[m:]
		case protowire.BytesType:
			val, m := protowire.ConsumeBytes(b)
			if m < 0 {
				return fmt.Errorf("malformed bytes: %w", protowire.ParseError(m))
			}
			v, b = val, b[m:]
		case protowire.Fixed32Type, protowire.Fixed64Type:
			m := protowire.ConsumeFieldValue(num, typ, b)
			if m < 0 {
				return fmt.Errorf("malformed field: %w", protowire.ParseError(m))
			}
			b = b[m:]
			continue
		default:
			return errors.New("groups are not expected in geosite files")
		}
		if err := f(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}
