package window

import (
	"testing"

	"github.com/skiffvpn/skiff/core/link"
)

// TestHysteriaLabel: a Hysteria v1 node shows as "Hysteria", without the
// TLS it always has (as Hysteria2 and TUIC).
func TestHysteriaLabel(t *testing.T) {
	n, err := link.Parse("hysteria://h.example:443?peer=s.example&upmbps=1&downmbps=1#h")
	if err != nil {
		t.Fatal(err)
	}
	if got := protocolLabel(n); got != "Hysteria" {
		t.Fatalf("protocolLabel = %q, want Hysteria", got)
	}
}
