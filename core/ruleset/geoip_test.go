package ruleset

import (
	"bytes"
	"net"
	"strings"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"

	"github.com/skiffvpn/skiff/core/flow"
)

// countryDB writes a small Country database: network → ISO code.
func countryDB(t testing.TB, networks map[string]string) []byte {
	t.Helper()
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "GeoLite2-Country", RecordSize: 24})
	if err != nil {
		t.Fatal(err)
	}
	for cidr, iso := range networks {
		_, n, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatal(err)
		}
		rec := mmdbtype.Map{"country": mmdbtype.Map{"iso_code": mmdbtype.String(iso)}}
		if err := w.Insert(n, rec); err != nil {
			t.Fatal(err)
		}
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGeoIP(t *testing.T) {
	db := countryDB(t, map[string]string{
		"1.0.1.0/24":     "CN",
		"1.0.2.0/23":     "CN",
		"8.8.8.0/24":     "US",
		"2400:da00::/32": "CN",
		"2001:4860::/32": "US",
		"43.224.0.0/16":  "HK",
	})
	s, err := ParseGeoIP(db, "cn")
	if err != nil {
		t.Fatal(err)
	}
	checkMatches(t, s, []matchCase{
		{ipFlow("1.0.1.7", 443, flow.TCP), true},
		{ipFlow("1.0.3.255", 443, flow.TCP), true},
		{ipFlow("1.0.4.0", 443, flow.TCP), false},
		{ipFlow("8.8.8.8", 53, flow.UDP), false},
		{ipFlow("2400:da00::1", 443, flow.TCP), true},
		{ipFlow("2001:4860::8888", 443, flow.TCP), false},
		{ipFlow("43.224.1.1", 443, flow.TCP), false},
		{nameFlow("www.baidu.com", 443), false}, // names are not resolved to match
	})
	both, err := Parse(FormatGeoIP+"cn,HK", db)
	if err != nil || !both.Match(ipFlow("43.224.1.1", 443, flow.TCP)) || !both.Match(ipFlow("1.0.1.1", 443, flow.TCP)) {
		t.Errorf("geoip:cn,HK = %v, %v", both, err)
	}
	if _, err := ParseGeoIP(db, "jp"); err == nil || !strings.Contains(err.Error(), "no network of jp") {
		t.Errorf("a country the database lacks: %v", err)
	}
	if _, err := ParseGeoIP([]byte("not a database"), "cn"); err == nil {
		t.Error("garbage parsed as a database")
	}
	if _, err := ParseGeoIP(db); err == nil {
		t.Error("no country: no error")
	}
}

func FuzzParseGeoIP(f *testing.F) {
	f.Add(countryDB(f, map[string]string{"1.0.1.0/24": "CN", "2400:da00::/32": "CN"}))
	f.Add([]byte("\xab\xcd\xefMaxMind.com"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if s, err := ParseGeoIP(b, "CN"); err == nil {
			fuzzMatch(s)
		}
	})
}
