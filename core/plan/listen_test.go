package plan

import (
	"strings"
	"testing"
)

func TestCheckListen(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // "" ok, else a part of the error
	}{
		{"127.0.0.1:7890", ""},
		{"127.0.0.1:0", ""},
		{"[::1]:1024", ""},
		{"127.0.0.2:65535", ""},
		{"127.0.0.1:25", "privileged port"},
		{"127.0.0.1:53", "privileged port"},
		{"[::1]:1023", "privileged port"},
		{"[::ffff:127.0.0.1]:80", "privileged port"},
		{"0.0.0.0:7890", "loopback"},
		{"192.168.1.2:7890", "loopback"},
		{"[::]:7890", "loopback"},
		{"localhost:7890", "loopback"},
		{"127.0.0.1", "loopback"},
		{"", "loopback"},
	} {
		err := CheckListen(tt.in)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckListen(%q) = %v, want ok", tt.in, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckListen(%q) = %v, want an error saying %q", tt.in, err, tt.want)
		}
	}
	// Validate is what the API's connect goes through.
	if err := (Request{Mode: ModeProxy, Listen: "127.0.0.1:25"}).Validate(); err == nil {
		t.Error("a connect request for port 25 validated")
	}
}
