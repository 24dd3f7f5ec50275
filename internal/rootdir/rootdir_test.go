package rootdir

import (
	"strings"
	"testing"
)

func TestParseDACL(t *testing.T) {
	want, err := ParseDACL(DirSDDL)
	if err != nil {
		t.Fatal(err)
	}
	if !want.Protected || len(want.ACEs) != 2 {
		t.Fatalf("DirSDDL parsed to %+v", want)
	}
	for _, ace := range want.ACEs {
		f := strings.Split(ace, ";")
		if f[0] != "A" || f[1] != "OICI" || f[2] != "FA" || (f[5] != "SY" && f[5] != "BA") {
			t.Errorf("ACE %q: want full control, inherited, for SYSTEM or the Administrators only", ace)
		}
	}
	for _, tc := range []struct {
		sddl string
		same bool
	}{
		// As Windows prints the directory after CreateDirectory with DirSDDL.
		{"O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)", true},
		{"D:P(A;OICI;FA;;;BA)(A;OICI;FA;;;SY)", true},
		{"D:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)S:AI(AU;SA;FA;;;WD)", true},
		// ProgramData's own, inherited: users create and read.
		{"D:AI(A;OICIID;FA;;;SY)(A;OICIID;FA;;;BA)(A;OICIID;GRGX;;;BU)(A;CIID;DCLCRPCR;;;BU)", false},
		{"D:(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)", false}, // not protected
		{"D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;WD)", false},
		{"D:P(A;OICI;FA;;;SY)", false},
	} {
		got, err := ParseDACL(tc.sddl)
		if err != nil {
			t.Errorf("%s: %v", tc.sddl, err)
			continue
		}
		if got.Same(want) != tc.same {
			t.Errorf("%s: same as DirSDDL %v, want %v", tc.sddl, !tc.same, tc.same)
		}
	}
	for _, bad := range []string{"O:SY", "D:X(A;;FA;;;SY)", "D:P(A;FA;SY)"} {
		if _, err := ParseDACL(bad); err == nil {
			t.Errorf("%s: parsed", bad)
		}
	}
}

func FuzzParseDACL(f *testing.F) {
	f.Add(DirSDDL)
	f.Add("O:BAG:SYD:PAI(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)S:AI(AU;SA;FA;;;WD)")
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDACL(s)
		if err != nil {
			return
		}
		if !d.Same(d) {
			t.Fatalf("%+v differs from itself", d)
		}
	})
}
