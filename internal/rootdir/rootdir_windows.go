package rootdir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/windows"
)

// ProgramData returns the ProgramData folder (C:\ProgramData) from the
// Known Folder API. Not from %ProgramData%: the environment is the
// caller's, and an elevated CLI inherits one its user may have set; the
// known folder comes from the machine's registry, which only
// Administrators change.
func ProgramData() (string, error) {
	p, err := windows.KnownFolderPath(windows.FOLDERID_ProgramData, windows.KF_FLAG_DEFAULT)
	if err != nil {
		return "", fmt.Errorf("the ProgramData folder: %w", err)
	}
	return p, nil
}

// Ensure makes dir a directory of SYSTEM's and the Administrators': it
// creates it with DirSDDL's protected DACL (so nothing is ever in it
// under another ACL), or checks the one there: a reparse point (a
// junction planted elsewhere) or one another user owns is refused, one
// with another DACL is given DirSDDL's. perm is unused (the DACL says
// it). The parent must exist. Run as SYSTEM or an elevated Administrator.
func Ensure(dir string, perm os.FileMode) error {
	dir = filepath.Clean(dir)
	sd, err := windows.SecurityDescriptorFromString(DirSDDL)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	p, err := windows.UTF16PtrFromString(dir)
	if err != nil {
		return err
	}
	sa := &windows.SecurityAttributes{SecurityDescriptor: sd}
	sa.Length = uint32(unsafe.Sizeof(*sa))
	switch err := windows.CreateDirectory(p, sa); {
	case err == nil:
		// Made with the DACL; checked below all the same (Wine, for one,
		// ignores the security attributes).
	case !errors.Is(err, windows.ERROR_ALREADY_EXISTS):
		return fmt.Errorf("create %s: %w", dir, err)
	default:
		attrs, err := windows.GetFileAttributes(p)
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		if attrs&windows.FILE_ATTRIBUTE_REPARSE_POINT != 0 || attrs&windows.FILE_ATTRIBUTE_DIRECTORY == 0 {
			return fmt.Errorf("%s is not a plain directory (attributes %#x): someone else made it; remove it", dir, attrs)
		}
	}
	if err := checkOwner(dir); err != nil {
		return err
	}
	if Check(dir) != nil {
		dacl, _, err := sd.DACL()
		if err != nil {
			return fmt.Errorf("%s: %w", dir, err)
		}
		// PROTECTED: the inherited ACEs go; the new ones reach what is in it.
		if err := windows.SetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT,
			windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil); err != nil {
			return fmt.Errorf("set the ACL of %s: %w", dir, err)
		}
		if err := Check(dir); err != nil {
			return err
		}
	}
	// Then what is in it, which no one else can add to any more, must be
	// the service's too: a file a user planted while the directory had
	// ProgramData's ACL stays theirs (an owner may always rewrite an
	// object's DACL), whatever ACL the directory gets.
	return checkContents(dir)
}

// Check reports whether dir is owned by SYSTEM, the Administrators or
// this process's user, and has DirSDDL's protected DACL.
func Check(dir string) error {
	if err := checkOwner(dir); err != nil {
		return err
	}
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("the ACL of %s: %w", dir, err)
	}
	got, err := ParseDACL(sd.String())
	if err != nil {
		return fmt.Errorf("the ACL of %s: %w", dir, err)
	}
	want, _ := ParseDACL(DirSDDL)
	if !got.Same(want) {
		return fmt.Errorf("%s has ACL %s, want %s", dir, sd.String(), DirSDDL)
	}
	return nil
}

// checkContents reports whether everything under dir is owned by SYSTEM,
// the Administrators or this process's user.
func checkContents(dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || d.Type()&fs.ModeIrregular != 0 {
			return fmt.Errorf("%s is a link: someone else made it; remove it", p)
		}
		return checkOwner(p)
	})
}

func checkOwner(dir string) error {
	sd, err := windows.GetNamedSecurityInfo(dir, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return fmt.Errorf("the owner of %s: %w", dir, err)
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return fmt.Errorf("the owner of %s: %w", dir, err)
	}
	if !AdminSID(owner) && !SelfSID(owner) {
		return fmt.Errorf("%s is owned by %s, not SYSTEM or the Administrators: someone else made it; remove it", dir, owner)
	}
	return nil
}

// SelfSID reports whether sid is this process's user: what it made
// itself (Wine's default owner is the user, not the Administrators).
func SelfSID(sid *windows.SID) bool {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	return err == nil && sid.Equals(u.User.Sid)
}

// AdminSID reports whether sid is LocalSystem or the Administrators group,
// the owners an object of the service's may have.
func AdminSID(sid *windows.SID) bool {
	return sid != nil && (sid.IsWellKnown(windows.WinLocalSystemSid) || sid.IsWellKnown(windows.WinBuiltinAdministratorsSid))
}

// ACE is one entry of a DACL as Windows holds it.
type ACE struct {
	Type, Flags uint8
	Mask        uint32
	SID         string
}

// ACEs returns sd's DACL entries, read with GetAce, and whether the DACL
// is protected: what Windows made of an SDDL string.
func ACEs(sd *windows.SECURITY_DESCRIPTOR) ([]ACE, bool, error) {
	ctl, _, err := sd.Control()
	if err != nil {
		return nil, false, err
	}
	acl, _, err := sd.DACL()
	if err != nil {
		return nil, false, err
	}
	var out []ACE
	for i := 0; i < int(acl.AceCount); i++ {
		var a *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(acl, uint32(i), &a); err != nil {
			return nil, false, err
		}
		sid := (*windows.SID)(unsafe.Pointer(&a.SidStart))
		out = append(out, ACE{Type: a.Header.AceType, Flags: a.Header.AceFlags, Mask: uint32(a.Mask), SID: sid.String()})
	}
	return out, ctl&windows.SE_DACL_PROTECTED != 0, nil
}
