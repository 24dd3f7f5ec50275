package ruleset

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

type siteDomain struct {
	typ   uint64
	value string
	attrs []string
}

// geoSiteFile encodes lists as a geosite.dat.
func geoSiteFile(lists map[string][]siteDomain) []byte {
	var file []byte
	for code, domains := range lists {
		var site []byte
		site = protowire.AppendTag(site, geoSiteCode, protowire.BytesType)
		site = protowire.AppendString(site, strings.ToUpper(code))
		for _, d := range domains {
			var dm []byte
			dm = protowire.AppendTag(dm, domainType, protowire.VarintType)
			dm = protowire.AppendVarint(dm, d.typ)
			dm = protowire.AppendTag(dm, domainValue, protowire.BytesType)
			dm = protowire.AppendString(dm, d.value)
			for _, a := range d.attrs {
				var at []byte
				at = protowire.AppendTag(at, attributeKey, protowire.BytesType)
				at = protowire.AppendString(at, a)
				at = protowire.AppendTag(at, 2, protowire.VarintType)
				at = protowire.AppendVarint(at, 1)
				dm = protowire.AppendTag(dm, domainAttribute, protowire.BytesType)
				dm = protowire.AppendBytes(dm, at)
			}
			site = protowire.AppendTag(site, geoSiteDomain, protowire.BytesType)
			site = protowire.AppendBytes(site, dm)
		}
		file = protowire.AppendTag(file, geoSiteListEntry, protowire.BytesType)
		file = protowire.AppendBytes(file, site)
	}
	return file
}

func TestGeoSite(t *testing.T) {
	file := geoSiteFile(map[string][]siteDomain{
		"cn": {
			{domainTypeDomain, "baidu.com", nil},
			{domainTypeFull, "www.qq.com", nil},
			{domainTypePlain, "taobao", nil},
			{domainTypeRegex, `^cdn[0-9]+\.example$`, nil},
			{domainTypeDomain, "ads.cn", []string{"ads"}},
		},
		"google": {{domainTypeDomain, "google.com", nil}},
	})
	s, err := Parse(FormatGeoSite+"cn", file)
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, s, []matchCase{
		{nameFlow("baidu.com", 443), true},
		{nameFlow("map.baidu.com", 443), true},
		{nameFlow("www.qq.com", 443), true},
		{nameFlow("mail.qq.com", 443), false},
		{nameFlow("world.taobao.com", 443), true},
		{nameFlow("cdn12.example", 443), true},
		{nameFlow("x.ads.cn", 443), true},
		{nameFlow("www.google.com", 443), false},
	})
	ads, err := ParseGeoSite(file, "CN@ads")
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, ads, []matchCase{
		{nameFlow("x.ads.cn", 443), true},
		{nameFlow("baidu.com", 443), false},
	})
	if _, err := ParseGeoSite(file, "jp"); err == nil || !strings.Contains(err.Error(), `no list "jp"`) {
		t.Errorf("a list the file lacks: %v", err)
	}
	if _, err := ParseGeoSite(file[:len(file)-3], "cn"); err == nil {
		t.Error("a truncated file parsed")
	}
	bad := geoSiteFile(map[string][]siteDomain{"cn": {{domainTypeDomain, "not a name", nil}}})
	if _, err := ParseGeoSite(bad, "cn"); err == nil || !strings.Contains(err.Error(), "not a domain") {
		t.Errorf("a bad domain: %v", err)
	}
}

func FuzzParseGeoSite(f *testing.F) {
	f.Add(geoSiteFile(map[string][]siteDomain{"cn": {{domainTypeDomain, "baidu.com", []string{"ads"}}, {domainTypeRegex, "^a", nil}}}))
	f.Add([]byte{0x0a, 0x05, 0x0a, 0x02, 'c', 'n'})
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseGeoSite(b, "cn", "cn@ads"); err == nil {
			fuzzMatch(s)
		}
	})
}
