package subscription

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/skiffvpn/skiff/core/node"
	"github.com/skiffvpn/skiff/core/transport/xhttp"
)

// A mihomo xhttp proxy becomes an XHTTP node whose Extra carries the
// other xhttp-opts under Xray's names, which the transport reads.
func TestClashXHTTP(t *testing.T) {
	yml := `proxies:
  - name: xh
    type: vless
    server: x.example
    port: 443
    uuid: b831381d-6324-4d53-ad4f-8cda48b30811
    tls: true
    servername: x.example
    network: xhttp
    xhttp-opts:
      path: /xh
      host: cdn.example
      mode: stream-up
      headers: {X-Test: "1"}
      no-grpc-header: true
      x-padding-bytes: "200-300"
      sc-max-each-post-bytes: 500000
      reuse-settings: {max-connections: 2, h-max-request-times: "600-900"}
  - name: bad
    type: vless
    server: y.example
    port: 443
    uuid: b831381d-6324-4d53-ad4f-8cda48b30811
    network: xhttp
    xhttp-opts: {mode: sideways}
`
	res, err := Parse([]byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Nodes) != 1 || len(res.Warnings) != 1 {
		t.Fatalf("nodes %d, warnings %v; want the first only", len(res.Nodes), res.Warnings)
	}
	tr := res.Nodes[0].Transport
	if tr == nil || tr.Type != node.TransportXHTTP || tr.Path != "/xh" || tr.Host != "cdn.example" ||
		!reflect.DeepEqual(tr.Headers, map[string]string{"X-Test": "1"}) || tr.XHTTP == nil || tr.XHTTP.Mode != "stream-up" {
		t.Fatalf("transport = %+v", tr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(tr.XHTTP.Extra), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"noGRPCHeader": true, "xPaddingBytes": "200-300", "scMaxEachPostBytes": 500000.0,
		"xmux": map[string]any{"maxConnections": 2.0, "hMaxRequestTimes": "600-900"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("extra = %v, want %v", got, want)
	}
	ex, err := xhttp.ParseExtra(tr.XHTTP.Extra)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Padding != (xhttp.Range{From: 200, To: 300}) || !ex.NoGRPCHeader || ex.MaxEachPost != (xhttp.Range{From: 500000, To: 500000}) {
		t.Fatalf("ParseExtra = %+v", ex)
	}
}
