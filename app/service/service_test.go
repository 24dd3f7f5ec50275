package service

import (
	"strings"
	"testing"
)

func TestAllowed(t *testing.T) {
	a := &authorizer{gid: 1234}
	for _, tc := range []struct {
		p  Peer
		ok bool
	}{
		{Peer{UID: 0}, true},
		{Peer{UID: 1000, Groups: []int{100, 1234}}, true},
		{Peer{UID: 1000, Groups: []int{100}}, false},
		{Peer{UID: 1000}, false},
	} {
		err := a.allowed(&tc.p)
		if (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc.p, err)
		}
		if err != nil && !strings.Contains(err.Error(), "usermod -aG") {
			t.Errorf("refusal does not say what to do: %v", err)
		}
	}
	// Without the group, only root.
	if err := (&authorizer{gid: -1}).allowed(&Peer{UID: 1000, Groups: []int{0}}); err == nil {
		t.Error("a non-root peer was allowed without an operators' group")
	}
}

func TestUnit(t *testing.T) {
	u := Unit(PackagedBinary)
	for _, want := range []string{"ExecStart=/usr/bin/skiff service\n", "ExecStopPost=/usr/bin/skiff cleanup\n", "Restart=on-failure", "WantedBy=multi-user.target"} {
		if !strings.Contains(u, want) {
			t.Errorf("unit lacks %q:\n%s", want, u)
		}
	}
}
