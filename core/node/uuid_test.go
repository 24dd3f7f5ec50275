package node

import (
	"encoding/hex"
	"strings"
	"testing"
)

func TestParseUUID(t *testing.T) {
	tests := []struct {
		in, want string // want "" means an error
	}{
		{"b831381d-6324-4d53-ad4f-8cda48b30811", "b831381d63244d53ad4f8cda48b30811"},
		{"B831381D-6324-4D53-AD4F-8CDA48B30811", "b831381d63244d53ad4f8cda48b30811"},
		{"b831381d63244d53ad4f8cda48b30811", "b831381d63244d53ad4f8cda48b30811"},
		// UUIDv5 in the nil namespace, as Xray and sing-box map names;
		// vectors from Python's uuid.uuid5(uuid.UUID(int=0), name).
		{"skiff-test", "a674d556c5b8589b8c5007f83db7dcf8"},
		{"a", "35b65f33a6795e76af3c273ea349ede4"},
		{"example user 30 chars long xxx", "8af76f234b91598cacc98f5e97daf9bb"},
		{"", ""},
		{"0123456789012345678901234567890", ""},         // 31 characters
		{"b831381d-6324-4d53-ad4f-8cda48b3081g", ""},    // not hex
		{"b831381d+6324-4d53-ad4f-8cda48b30811", ""},    // dash misplaced
		{"b831381d-6324-4d53-ad4f-8cda48b30811-00", ""}, // too long
	}
	for _, tt := range tests {
		u, err := ParseUUID(tt.in)
		if tt.want == "" {
			if err == nil {
				t.Errorf("ParseUUID(%q) = %x, want an error", tt.in, u)
			} else if tt.in != "" && strings.Contains(err.Error(), tt.in) {
				t.Errorf("ParseUUID error quotes its input: %v", err)
			}
			continue
		}
		if err != nil || hex.EncodeToString(u[:]) != tt.want {
			t.Errorf("ParseUUID(%q) = %x, %v; want %s", tt.in, u, err, tt.want)
		}
	}
}

func FuzzParseUUID(f *testing.F) {
	for _, s := range []string{"b831381d-6324-4d53-ad4f-8cda48b30811", "b831381d63244d53ad4f8cda48b30811", "skiff-test", "", "b831381d+6324-4d53-ad4f-8cda48b30811"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, err := ParseUUID(s)
		if err != nil {
			if s != "" && strings.Contains(err.Error(), s) {
				t.Fatalf("error quotes its input: %v", err)
			}
			return
		}
		// The canonical forms name their own bytes.
		if len(s) == 32 && hex.EncodeToString(u[:]) != strings.ToLower(s) {
			t.Fatalf("ParseUUID(%q) = %x", s, u)
		}
	})
}
