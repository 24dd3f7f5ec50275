// Package windows makes the pieces of Skiff's Windows build that are not Go
// code: the executable's resource (icon, version information, manifest) as
// a COFF .syso that the Go linker links in, made with mingw-w64's windres,
// and wintun.dll, the official build fetched through the Go module proxy
// and checked against its pinned hash (wintun.go). The installer itself is
// packaging/windows/skiff.nsi, built with makensis.
package windows

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/packaging/icons"
)

// Windres is the resource compiler (Debian's binutils-mingw-w64-x86-64).
var Windres = "x86_64-w64-mingw32-windres"

// Resource describes the resource of one of Skiff's executables:
// skiff.exe (the command line and the service, cgo-free), skiff-window.exe
// (the window) or skiff-tray.exe (the tray, cgo-free).
type Resource struct {
	Program string // "skiff", "skiff-window" or "skiff-tray"; "" is "skiff"
	Version string // "0.1.0"
	Build   string // the fourth version field, e.g. "1"
	Commit  string // shown in the version's product string
	Year    int    // for the copyright line
	Repo    string // the repository root (assets/icon.png)
}

// fileVersion returns the four comma-separated numbers of VERSIONINFO.
func (r Resource) fileVersion() (string, error) {
	parts := strings.Split(strings.SplitN(r.Version, "-", 2)[0], ".")
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	if len(parts) > 3 {
		return "", fmt.Errorf("windows: version %q has more than three numbers", r.Version)
	}
	b := r.Build
	if b == "" {
		b = "0"
	}
	parts = append(parts, b)
	for _, p := range parts {
		if n, err := strconv.Atoi(p); err != nil || n < 0 || n > 65535 {
			return "", fmt.Errorf("windows: version %q build %q: %q is not a number from 0 to 65535", r.Version, r.Build, p)
		}
	}
	return strings.Join(parts, ","), nil
}

// RC returns the resource script, naming the icon file and the manifest
// file it includes.
func (r Resource) RC(ico, manifest string) (string, error) {
	fv, err := r.fileVersion()
	if err != nil {
		return "", err
	}
	product := r.Version
	if r.Commit != "" {
		product += " (commit " + r.Commit + ")"
	}
	program, desc := r.Program, "Skiff VPN client (command line and service)"
	if program == "" {
		program = "skiff"
	}
	if program != "skiff" {
		desc = "Skiff VPN client"
	}
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	var b strings.Builder
	fmt.Fprintf(&b, "1 ICON %s\n", q(filepath.ToSlash(ico)))
	fmt.Fprintf(&b, "1 24 %s\n", q(filepath.ToSlash(manifest))) // RT_MANIFEST
	fmt.Fprintf(&b, "1 VERSIONINFO\nFILEVERSION %s\nPRODUCTVERSION %s\nFILEOS 0x40004\nFILETYPE 0x1\nBEGIN\n", fv, fv)
	b.WriteString("  BLOCK \"StringFileInfo\"\n  BEGIN\n    BLOCK \"040904B0\"\n    BEGIN\n")
	for _, kv := range [][2]string{
		{"CompanyName", "Skiff"},
		{"FileDescription", desc},
		{"FileVersion", r.Version},
		{"InternalName", program},
		{"LegalCopyright", fmt.Sprintf("Copyright (c) %d The Skiff Authors, MIT licence", r.Year)},
		{"OriginalFilename", program + ".exe"},
		{"ProductName", "Skiff"},
		{"ProductVersion", product},
	} {
		fmt.Fprintf(&b, "      VALUE %s, %s\n", q(kv[0]), q(kv[1]))
	}
	b.WriteString("    END\n  END\n  BLOCK \"VarFileInfo\"\n  BEGIN\n    VALUE \"Translation\", 0x409, 1200\n  END\nEND\n")
	return b.String(), nil
}

// manifest asks for no elevation (the service does the privileged part),
// per-monitor DPI awareness and the current common controls, and declares
// Windows 10 and 11 support.
const manifest = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<assembly xmlns="urn:schemas-microsoft-com:asm.v1" manifestVersion="1.0">
  <assemblyIdentity version="1.0.0.0" processorArchitecture="amd64" name="io.github.skiffvpn.skiff" type="win32"/>
  <description>Skiff VPN client</description>
  <trustInfo xmlns="urn:schemas-microsoft-com:asm.v3">
    <security><requestedPrivileges><requestedExecutionLevel level="asInvoker" uiAccess="false"/></requestedPrivileges></security>
  </trustInfo>
  <compatibility xmlns="urn:schemas-microsoft-com:compatibility.v1">
    <application><supportedOS Id="{8e0f7a12-bfb3-4fe8-b9a5-48fd50a15a9a}"/></application>
  </compatibility>
  <application xmlns="urn:schemas-microsoft-com:asm.v3">
    <windowsSettings>
      <dpiAware xmlns="http://schemas.microsoft.com/SMI/2005/WindowsSettings">true/pm</dpiAware>
      <dpiAwareness xmlns="http://schemas.microsoft.com/SMI/2016/WindowsSettings">permonitorv2,permonitor</dpiAwareness>
    </windowsSettings>
  </application>
  <dependency>
    <dependentAssembly>
      <assemblyIdentity type="win32" name="Microsoft.Windows.Common-Controls" version="6.0.0.0" processorArchitecture="*" publicKeyToken="6595b64144ccf1df" language="*"/>
    </dependentAssembly>
  </dependency>
</assembly>
`

// ICO renders the application icon as a Windows .ico.
func (r Resource) ICO() ([]byte, error) {
	imgs, err := icons.RenderRepo(r.Repo, icons.Windows)
	if err != nil {
		return nil, err
	}
	return icons.ICO(imgs)
}

// WriteSyso renders the icon, writes the resource script and compiles it
// into out (a .syso in the main package's directory, e.g.
// rsrc_windows_amd64.syso, so that only GOOS=windows builds link it).
func (r Resource) WriteSyso(out string) error {
	dir, err := os.MkdirTemp("", "skiff-winres-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ico, err := r.ICO()
	if err != nil {
		return err
	}
	icoPath, manPath, rcPath := filepath.Join(dir, "skiff.ico"), filepath.Join(dir, "skiff.manifest"), filepath.Join(dir, "skiff.rc")
	if err := os.WriteFile(icoPath, ico, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(manPath, []byte(manifest), 0o644); err != nil {
		return err
	}
	rc, err := r.RC(icoPath, manPath)
	if err != nil {
		return err
	}
	if err := os.WriteFile(rcPath, []byte(rc), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(Windres, "--input-format=rc", "--output-format=coff", "-c", "65001", "-i", rcPath, "-o", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("windows: %s: %v\n%s", Windres, err, b)
	}
	return nil
}
