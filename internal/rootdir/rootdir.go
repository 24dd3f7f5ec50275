// Package rootdir makes and checks the directories where the privileged
// service keeps its state: created root-only before anything is written
// into them, and refused when someone else made them first. A directory
// that another user owns, or may write, would let that user plant what
// root later reads (the TUN state file names commands root runs) or read
// what root keeps there (the profile's passwords).
//
// On Linux and macOS a directory is root's when it and every directory
// above it is owned by root and writable by no one else (group 0 may
// write: it is root's). On Windows it is when SYSTEM or the Administrators
// own it and its DACL is DirSDDL's, protected from inheritance.
package rootdir

import (
	"fmt"
	"slices"
	"strings"
)

// DirSDDL is the DACL of a state directory on Windows: SYSTEM and the
// Administrators full control, inherited by the files and directories in
// it (OICI), and nothing inherited from above (P): ProgramData's own ACL
// lets every user create and read there.
const DirSDDL = "D:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)"

// DACL is the parsed D: part of an SDDL string.
type DACL struct {
	Protected bool     // P: inheritance from the parent is blocked
	ACEs      []string // each ACE's text without its parentheses
}

// ParseDACL returns the DACL of an SDDL security descriptor string (as
// ConvertSecurityDescriptorToStringSecurityDescriptor prints it, or as
// written here). It checks only the syntax the comparison needs.
func ParseDACL(sddl string) (DACL, error) {
	i := strings.Index(sddl, "D:")
	if i < 0 {
		return DACL{}, fmt.Errorf("sddl %q: no DACL", sddl)
	}
	s := sddl[i+2:]
	var d DACL
	flags, rest, _ := strings.Cut(s, "(")
	for _, f := range []string{"NO_ACCESS_CONTROL", "AI", "AR", "P"} {
		if strings.Contains(flags, f) {
			if f == "P" {
				d.Protected = true
			}
			flags = strings.ReplaceAll(flags, f, "")
		}
	}
	if flags != "" {
		return DACL{}, fmt.Errorf("sddl %q: DACL flags %q", sddl, flags)
	}
	if rest == "" {
		return d, nil
	}
	for _, ace := range strings.Split("("+rest, ")") {
		if ace == "" {
			continue
		}
		if strings.HasPrefix(ace, "S:") {
			break // the SACL follows
		}
		a, ok := strings.CutPrefix(ace, "(")
		if !ok || strings.ContainsAny(a, "()") || strings.Count(a, ";") != 5 {
			return DACL{}, fmt.Errorf("sddl %q: ACE %q", sddl, ace)
		}
		d.ACEs = append(d.ACEs, a)
	}
	return d, nil
}

// Same reports whether d is protected and grants what want does, ACE for
// ACE in any order.
func (d DACL) Same(want DACL) bool {
	if d.Protected != want.Protected || len(d.ACEs) != len(want.ACEs) {
		return false
	}
	a, b := slices.Clone(d.ACEs), slices.Clone(want.ACEs)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
