package rootdir

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/windows"
)

// TestDirSDDLParsed: Windows makes of DirSDDL a protected DACL of two
// allow ACEs, full control (0x1f01ff) inherited by files and directories,
// for SYSTEM and the Administrators only.
func TestDirSDDLParsed(t *testing.T) {
	sd, err := windows.SecurityDescriptorFromString(DirSDDL)
	if err != nil {
		t.Fatal(err)
	}
	aces, protected, err := ACEs(sd)
	if err != nil {
		t.Fatal(err)
	}
	if !protected || len(aces) != 2 {
		t.Fatalf("protected %v, ACEs %+v", protected, aces)
	}
	for i, want := range []string{"S-1-5-18", "S-1-5-32-544"} {
		a := aces[i]
		if a.Type != windows.ACCESS_ALLOWED_ACE_TYPE || a.Mask != 0x1f01ff || a.Flags != windows.OBJECT_INHERIT_ACE|windows.CONTAINER_INHERIT_ACE || a.SID != want {
			t.Errorf("ACE %d: %+v, want full control for %s, inherited", i, a, want)
		}
	}
}

// underWine reports whether this runs under Wine (its ntdll exports
// wine_get_version).
func UnderWine() bool {
	return windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version").Find() == nil
}

// TestEnsureWindows creates a state directory with DirSDDL and reads its
// ACL back; then gives a directory made with the inherited ACL (as
// ProgramData lets every user make one) DirSDDL's. Wine keeps no file
// ACLs (it derives one from the Unix mode: SYSTEM, the user, and Everyone
// for the mode's other bits), so there Ensure must fail, closed.
func TestEnsureWindows(t *testing.T) {
	base, err := os.MkdirTemp("", "skiff-rootdir-")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.RemoveAll(base); err != nil {
			t.Logf("remove %s: %v", base, err) // Wine: "Invalid function"
		}
	}()
	dir := filepath.Join(base, "Skiff")
	err = Ensure(dir, 0)
	if UnderWine() {
		if err == nil {
			t.Fatal("Ensure succeeded under Wine, which cannot hold the ACL")
		}
		t.Logf("under Wine, refused as it must be: %v", err)
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION|windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("created: %s", sd)
	got, err := ParseDACL(sd.String())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ParseDACL(DirSDDL)
	if !got.Same(want) {
		t.Errorf("ACL %s, want %s", sd, DirSDDL)
	}
	// A file written in it inherits the ACL.
	f := filepath.Join(dir, "profile.json")
	os.WriteFile(f, []byte("{}"), 0o600)
	if fsd, err := windows.GetNamedSecurityInfo(f, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION); err == nil {
		t.Logf("file in it: %s", fsd)
	}

	open := filepath.Join(base, "Open")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}
	before, _ := windows.GetNamedSecurityInfo(open, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	t.Logf("before: %s", before)
	if err := Ensure(open, 0); err != nil {
		t.Fatal(err)
	}
	after, _ := windows.GetNamedSecurityInfo(open, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	t.Logf("after: %s", after)
	if err := Check(open); err != nil {
		t.Error(err)
	}
}

func TestProgramData(t *testing.T) {
	t.Setenv("ProgramData", `C:\users\public\planted`)
	p, err := ProgramData()
	if err != nil {
		t.Fatal(err)
	}
	if p == `C:\users\public\planted` {
		t.Errorf("ProgramData %s: from the environment", p)
	}
	t.Logf("ProgramData: %s", p)
}
