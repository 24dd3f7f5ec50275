// Package windows makes the pieces of Skiff's Windows build that are not Go
// code: the executable's resource (icon, version information, manifest) as
// a COFF .syso that the Go linker links in, made with mingw-w64's windres,
// and the check of wintun.dll against the official release's hash. The
// installer itself is packaging/windows/skiff.nsi, built with makensis.
package windows

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skiffvpn/skiff/packaging/icons"
)

// WintunVersion is the wintun release the installer ships.
const WintunVersion = "0.14.1"

// WintunSHA256 is the SHA-256 of wintun/bin/amd64/wintun.dll in the official
// wintun-0.14.1.zip (whose own SHA-256 is WintunZipSHA256), signed by
// WireGuard LLC.
const (
	WintunSHA256    = "e5da8447dc2c320edc0fc52fa01885c103de8c118481f683643cacc3220dafce"
	WintunZipSHA256 = "07c256185d6ee3652e09fa55c0b673e2624b565e02c4b9091c79ca7d2f24ef51"
)

// CheckWintun returns nil when the file at path is the pinned wintun.dll.
func CheckWintun(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("wintun: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return fmt.Errorf("wintun: read %s: %w", path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != WintunSHA256 {
		return fmt.Errorf("wintun: %s has SHA-256 %s, not the official wintun %s amd64 build (%s)", path, got, WintunVersion, WintunSHA256)
	}
	return nil
}

// Windres is the resource compiler (Debian's binutils-mingw-w64-x86-64).
var Windres = "x86_64-w64-mingw32-windres"

// Resource describes the resource of one of Skiff's two executables:
// skiff.exe (the command line and the service, cgo-free) or
// skiff-window.exe (the window).
type Resource struct {
	Program string // "skiff" or "skiff-window"; "" is "skiff"
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
	src, err := os.ReadFile(filepath.Join(r.Repo, "assets", "icon.png"))
	if err != nil {
		return nil, err
	}
	imgs, err := icons.Render(src, icons.Windows)
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
