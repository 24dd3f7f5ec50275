// Package linux builds Skiff's Linux packages, a .deb and an .rpm, with
// nfpm used as a library. One Spec describes both: the two binaries (skiff,
// the cgo-free command line and service, and skiff-window), the systemd
// unit the binary prints (`skiff service unit`, so the unit text lives in
// the service code alone), the desktop entry, the hicolor icons rendered
// from the app icon, the AppStream metainfo, the manual page, the licence,
// and the maintainer scripts beside this file, which are written for both
// the deb's and the rpm's calling conventions.
package linux

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb" // registers the deb packager
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm" // registers the rpm packager

	"github.com/skiffvpn/skiff/packaging/icons"
)

// AppID is the reverse-DNS application ID: the desktop entry's and the
// metainfo's file names and the icon name (the same as FyneApp.toml's).
const AppID = "io.github.skiffvpn.skiff"

// Name is the package name.
const Name = "skiff"

// Maintainer is the packages' maintainer field.
const Maintainer = "Skiff developers <skiff@users.noreply.github.com>"

// Spec is what one build of the packages is made from.
type Spec struct {
	Version string    // upstream version, e.g. "0.1.0"
	Release string    // package release, e.g. "1"
	Date    time.Time // the build's date (changelog, metainfo, file times); the commit's for reproducible builds
	Binary  string    // the linux/amd64 skiff binary (command line and service; cgo-free)
	Window  string    // the linux/amd64 skiff-window binary (the window; links GLFW)
	Tray    string    // the linux/amd64 skiff-tray binary (the tray without the window; cgo-free), started at login
	Unit    string    // the systemd unit (`skiff service unit`); "" builds packages without the service
	Repo    string    // the repository root (assets/, LICENSE, packaging/linux/)
	Out     string    // where the packages go
}

// Formats are the package formats Build makes.
var Formats = []string{"deb", "rpm"}

// FileName returns the conventional file name of the package of format.
func (s Spec) FileName(format string) string {
	switch format {
	case "deb":
		return fmt.Sprintf("%s_%s-%s_amd64.deb", Name, s.Version, s.Release)
	case "rpm":
		return fmt.Sprintf("%s-%s-%s.x86_64.rpm", Name, s.Version, s.Release)
	}
	return ""
}

// DebDepends are the Debian/Ubuntu packages of the libraries the window
// binary links (GLFW's X11 and OpenGL, through Fyne; skiff itself is
// static), and of the tools the maintainer scripts call.
var DebDepends = []string{
	"libc6 (>= 2.34)", "libgl1", "libx11-6", "libxcursor1", "libxrandr2", "libxinerama1", "libxi6", "libxxf86vm1",
	"passwd",
}

// DebRecommends: a Mesa driver for the window's OpenGL, and a full CJK
// font for the rare characters beyond the subset the window embeds
// (app/window/font: the common Hanzi, kana and Hangul draw without it).
var DebRecommends = []string{"libgl1-mesa-dri", "fonts-noto-cjk"}

// RPMRequires names the same libraries by soname, which Fedora, openSUSE
// and RHEL all provide under their own package names.
var RPMRequires = []string{
	"libGL.so.1()(64bit)", "libX11.so.6()(64bit)", "libXcursor.so.1()(64bit)", "libXrandr.so.2()(64bit)",
	"libXinerama.so.1()(64bit)", "libXi.so.6()(64bit)", "libXxf86vm.so.1()(64bit)",
	"/usr/sbin/groupadd", "/usr/sbin/usermod",
}

// RPMRecommends is DebRecommends under Fedora's names.
var RPMRecommends = []string{"mesa-dri-drivers", "google-noto-sans-cjk-fonts"}

const description = `VPN client that gets past throttling and blocking
Skiff captures the whole machine's traffic through a TUN device, or serves
a local SOCKS5/HTTP proxy, and sends it over Hysteria2 (QUIC) and VLESS over
WebSocket over TLS, failing over between servers on its own when a path
degrades. It imports the share links and subscriptions people already have.
A privileged service (skiff.service) sets up the tunnel for the members of
the group skiff, so the window needs no root.`

// Build writes the deb and the rpm into s.Out and returns their paths. Its
// generated files (icons, metainfo, changelog) are staged in a temporary
// directory.
func Build(s Spec) ([]string, error) {
	stage, err := os.MkdirTemp("", "skiff-pkg-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(stage)
	contents, err := s.contents(stage)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Out, 0o755); err != nil {
		return nil, err
	}
	var out []string
	for _, format := range Formats {
		info := s.info(contents, format)
		path := filepath.Join(s.Out, s.FileName(format))
		if err := write(info, format, path); err != nil {
			return nil, err
		}
		out = append(out, path)
	}
	return out, nil
}

func write(info *nfpm.Info, format, path string) error {
	p, err := nfpm.Get(format)
	if err != nil {
		return err
	}
	info = nfpm.WithDefaults(info)
	if err := nfpm.PrepareForPackager(info, format); err != nil {
		return fmt.Errorf("linux: prepare %s: %w", format, err)
	}
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := p.Package(info, f); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("linux: build %s: %w", format, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, path)
}

func (s Spec) info(contents files.Contents, format string) *nfpm.Info {
	scripts := filepath.Join(s.Repo, "packaging", "linux")
	info := &nfpm.Info{
		Name:          Name,
		Arch:          "amd64",
		Platform:      "linux",
		Version:       s.Version,
		VersionSchema: "none",
		Release:       s.Release,
		Section:       "net",
		Priority:      "optional",
		Maintainer:    Maintainer,
		Vendor:        "Skiff",
		Description:   description,
		Homepage:      "https://github.com/skiffvpn/skiff",
		License:       "MIT",
		MTime:         s.Date,
		Overridables: nfpm.Overridables{
			Contents: contents,
			Umask:    0o022,
			Scripts: nfpm.Scripts{
				PostInstall: filepath.Join(scripts, "postinst.sh"),
				PreRemove:   filepath.Join(scripts, "prerm.sh"),
				PostRemove:  filepath.Join(scripts, "postrm.sh"),
			},
			RPM: nfpm.RPM{
				Group:       "Applications/Internet",
				Summary:     strings.SplitN(description, "\n", 2)[0],
				Compression: "zstd", // rpm ≥ 4.14; nfpm's xz is pure Go and slow on a 40 MB binary
				Packager:    Maintainer,
				BuildHost:   "skiff-build",
			},
			Deb: nfpm.Deb{Compression: "gzip"}, // every dpkg reads it; zstd needs dpkg ≥ 1.21.18
		},
	}
	if format == "rpm" {
		info.Depends, info.Recommends = RPMRequires, RPMRecommends
	} else {
		info.Depends, info.Recommends = DebDepends, DebRecommends
	}
	return info
}

// AutostartPath is the XDG autostart entry that starts skiff-tray at
// login, for every user (the XDG Autostart spec's system directory).
const AutostartPath = "/etc/xdg/autostart/skiff-tray.desktop"

// UnitPath returns where the package of format installs the systemd unit:
// Debian 12 still keeps units in /lib (its /usr merge is not finished), the
// rpm distributions in /usr/lib.
func UnitPath(format string) string {
	if format == "deb" {
		return "/lib/systemd/system/skiff.service"
	}
	return "/usr/lib/systemd/system/skiff.service"
}

func (s Spec) contents(stage string) (files.Contents, error) {
	dir := filepath.Join(s.Repo, "packaging", "linux")
	file := func(src, dst string, mode os.FileMode) *files.Content {
		return &files.Content{Source: src, Destination: dst, FileInfo: &files.ContentFileInfo{Mode: mode, MTime: s.Date}}
	}
	c := files.Contents{
		file(s.Binary, "/usr/bin/skiff", 0o755),
		file(s.Window, "/usr/bin/skiff-window", 0o755),
		file(s.Tray, "/usr/bin/skiff-tray", 0o755),
		file(filepath.Join(dir, AppID+".desktop"), "/usr/share/applications/"+AppID+".desktop", 0o644),
		// the tray at login, window closed (a conffile: a user's edit, or
		// Hidden=true to turn it off, survives upgrades)
		{Source: filepath.Join(dir, "skiff-tray.desktop"), Destination: AutostartPath, Type: files.TypeConfig,
			FileInfo: &files.ContentFileInfo{Mode: 0o644, MTime: s.Date}},
		file(filepath.Join(s.Repo, "assets", "icon.svg"), "/usr/share/icons/hicolor/scalable/apps/"+AppID+".svg", 0o644),
	}
	if s.Unit != "" {
		for _, format := range Formats {
			u := file(s.Unit, UnitPath(format), 0o644)
			u.Packager = format
			c = append(c, u)
		}
	}

	imgs, err := icons.RenderRepo(s.Repo, icons.Hicolor)
	if err != nil {
		return nil, err
	}
	for _, im := range imgs {
		p := filepath.Join(stage, fmt.Sprintf("icon-%d.png", im.Size))
		if err := os.WriteFile(p, im.PNG, 0o644); err != nil {
			return nil, err
		}
		c = append(c, file(p, fmt.Sprintf("/usr/share/icons/hicolor/%dx%d/apps/%s.png", im.Size, im.Size, AppID), 0o644))
	}

	meta, err := os.ReadFile(filepath.Join(dir, AppID+".metainfo.xml"))
	if err != nil {
		return nil, err
	}
	meta = bytes.ReplaceAll(meta, []byte("@VERSION@"), []byte(s.Version))
	meta = bytes.ReplaceAll(meta, []byte("@DATE@"), []byte(s.Date.UTC().Format("2006-01-02")))
	if err := os.WriteFile(filepath.Join(stage, "metainfo.xml"), meta, 0o644); err != nil {
		return nil, err
	}
	c = append(c, file(filepath.Join(stage, "metainfo.xml"), "/usr/share/metainfo/"+AppID+".metainfo.xml", 0o644))

	man, err := os.ReadFile(filepath.Join(dir, "skiff.1"))
	if err != nil {
		return nil, err
	}
	if err := writeGzip(filepath.Join(stage, "skiff.1.gz"), man); err != nil {
		return nil, err
	}
	c = append(c, file(filepath.Join(stage, "skiff.1.gz"), "/usr/share/man/man1/skiff.1.gz", 0o644),
		// one page describes the three programs
		&files.Content{Source: "skiff.1.gz", Destination: "/usr/share/man/man1/skiff-window.1.gz", Type: files.TypeSymlink,
			FileInfo: &files.ContentFileInfo{Mode: 0o777, MTime: s.Date}},
		&files.Content{Source: "skiff.1.gz", Destination: "/usr/share/man/man1/skiff-tray.1.gz", Type: files.TypeSymlink,
			FileInfo: &files.ContentFileInfo{Mode: 0o777, MTime: s.Date}})

	license, err := os.ReadFile(filepath.Join(s.Repo, "LICENSE"))
	if err != nil {
		return nil, err
	}
	fontLicense, err := os.ReadFile(filepath.Join(s.Repo, "app", "window", "font", "LICENSE"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(stage, "copyright"), copyright(license, fontLicense), 0o644); err != nil {
		return nil, err
	}
	cp := file(filepath.Join(stage, "copyright"), "/usr/share/doc/skiff/copyright", 0o644)
	cp.Packager = "deb"
	lic := file(filepath.Join(s.Repo, "LICENSE"), "/usr/share/licenses/skiff/LICENSE", 0o644)
	lic.Packager, lic.Type = "rpm", files.TypeRPMLicense
	fontLic := file(filepath.Join(s.Repo, "app", "window", "font", "LICENSE"), "/usr/share/licenses/skiff/LICENSE.cjk-font", 0o644)
	fontLic.Packager, fontLic.Type = "rpm", files.TypeRPMLicense
	if err := writeGzip(filepath.Join(stage, "changelog.Debian.gz"), s.changelog()); err != nil {
		return nil, err
	}
	cl := file(filepath.Join(stage, "changelog.Debian.gz"), "/usr/share/doc/skiff/changelog.Debian.gz", 0o644)
	cl.Packager = "deb"
	return append(c, cp, lic, fontLic, cl), nil
}

// copyright is the deb's machine-readable copyright file around LICENSE,
// and fontLicense for the CJK font subset the window embeds (app/window/font).
func copyright(license, fontLicense []byte) []byte {
	var b bytes.Buffer
	b.WriteString("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n")
	b.WriteString("Upstream-Name: skiff\nSource: https://github.com/skiffvpn/skiff\n\n")
	b.WriteString("Files: *\nCopyright: 2026 The Skiff Authors\nLicense: Expat\n")
	b.WriteString("Comment: the binary also contains Go modules under their own BSD-, MIT- and\n")
	b.WriteString(" Apache-2.0-style licences (Fyne, gVisor, quic-go, wireguard-go, golang.org/x).\n\n")
	b.WriteString("Files: app/window/font/cjk-subset.otf\nCopyright: 2014-2021 Adobe (http://www.adobe.com/)\nLicense: OFL-1.1\n")
	b.WriteString("Comment: a subset of Noto Sans CJK SC, embedded in skiff-window as its CJK fallback.\n\n")
	// the licence bodies after their title and copyright lines, as the format wants
	licenseBody(&b, "Expat", license, "Permission is hereby granted")
	b.WriteString("\n")
	licenseBody(&b, "OFL-1.1", fontLicense, "-----")
	return b.Bytes()
}

// licenseBody writes a License paragraph named name: text from its first
// line starting with from, indented, blank lines as " .".
func licenseBody(b *bytes.Buffer, name string, license []byte, from string) {
	b.WriteString("License: " + name + "\n")
	text := strings.TrimSpace(string(license))
	if i := strings.Index(text, from); i >= 0 {
		text = text[i:]
	}
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			b.WriteString(" .\n")
		} else {
			b.WriteString(" " + strings.TrimRight(line, " ") + "\n")
		}
	}
}

func (s Spec) changelog() []byte {
	return fmt.Appendf(nil, "%s (%s-%s) unstable; urgency=medium\n\n  * Release %s.\n\n -- %s  %s\n",
		Name, s.Version, s.Release, s.Version, Maintainer, s.Date.UTC().Format("Mon, 02 Jan 2006 15:04:05 -0700"))
}

// writeGzip writes data gzipped at the best level with no name or time in
// the header, so that the package is reproducible.
func writeGzip(path string, data []byte) error {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
