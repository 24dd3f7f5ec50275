package service

import (
	"strconv"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/internal/rootdir"
)

// TestPipeSDDL: members may read and write the pipe but not create an
// instance of it (FILE_CREATE_PIPE_INSTANCE), which the GRGW granted
// before included; only SYSTEM and the Administrators get full control.
func TestPipeSDDL(t *testing.T) {
	const member = "S-1-5-21-1-2-3-1001"
	s := pipeSDDL(member)
	if s != "D:P(A;;FA;;;SY)(A;;FA;;;BA)(A;;0x12018b;;;"+member+")" {
		t.Errorf("pipe SDDL %s", s)
	}
	d, err := rootdir.ParseDACL(s)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Protected || len(d.ACEs) != 3 {
		t.Fatalf("%s parsed to %+v", s, d)
	}
	for _, ace := range d.ACEs {
		f := strings.Split(ace, ";")
		if f[0] != "A" {
			t.Errorf("ACE %q is not an allow ACE", ace)
		}
		switch f[5] {
		case "SY", "BA":
			if f[2] != "FA" {
				t.Errorf("%s: %s, want FA", f[5], f[2])
			}
		case member:
			if strings.HasPrefix(f[2], "G") || !strings.HasPrefix(f[2], "0x") {
				t.Fatalf("member rights %q: generic rights hide what they include", f[2])
			}
			r, err := strconv.ParseUint(f[2][2:], 16, 32)
			if err != nil {
				t.Fatal(err)
			}
			if r&fileCreatePipeInstance != 0 {
				t.Errorf("members may create pipe instances: %#x", r)
			}
			if r&(fileReadData|fileWriteData|readControl) != fileReadData|fileWriteData|readControl {
				t.Errorf("members cannot read, write or read the owner: %#x", r)
			}
			if r&^uint64(memberPipeAccess) != 0 {
				t.Errorf("members get more than memberPipeAccess: %#x", r)
			}
		default:
			t.Errorf("ACE for %s", f[5])
		}
	}
	if s := pipeSDDL(""); s != "D:P(A;;FA;;;SY)(A;;FA;;;BA)" {
		t.Errorf("without the group: %s", s)
	}
}
