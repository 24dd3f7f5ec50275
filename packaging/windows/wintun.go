package windows

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// WintunVersion is the wintun release the installer ships.
const WintunVersion = "0.14.1"

// WintunSHA256 is the SHA-256 of wintun/bin/amd64/wintun.dll in the official
// wintun-0.14.1.zip (whose own SHA-256 is WintunZipSHA256), signed by
// WireGuard LLC. The build refuses a wintun.dll of any other hash.
const (
	WintunSHA256    = "e5da8447dc2c320edc0fc52fa01885c103de8c118481f683643cacc3220dafce"
	WintunZipSHA256 = "07c256185d6ee3652e09fa55c0b673e2624b565e02c4b9091c79ca7d2f24ef51"
)

// The official DLL comes through the Go module proxy: nebula v1.9.5 (MIT)
// carries wintun 0.14.1's prebuilt DLLs and Wintun's licence unmodified in
// dist/windows/wintun. WintunModuleSum is the module's hash as recorded in
// the Go checksum database (its go.sum line), which `go mod download`
// checks as well; WintunLicenseSHA256 pins the licence text, so that a
// change of it is seen before it ships.
const (
	WintunModule        = "github.com/slackhq/nebula"
	WintunModuleVersion = "v1.9.5"
	WintunModuleSum     = "h1:ZrxcvP/lxwFglaijmiwXLuCSkybZMJnqSYI1S8DtGnY="
	WintunLicenseSHA256 = "183adac21e7d96c508c8fd34d394b7b6708bc81564ad1bad61ab66143a008cd2"

	wintunDLLPath     = "dist/windows/wintun/bin/amd64/wintun.dll"
	wintunLicensePath = "dist/windows/wintun/LICENSE.txt"
)

// The files FetchWintun writes, which the installer puts beside skiff.exe.
const (
	WintunDLL     = "wintun.dll"
	WintunLicense = "wintun-LICENSE.txt"
)

// ErrWintunHash is in the chain of the error for a file whose SHA-256 is
// not the pinned one.
var ErrWintunHash = errors.New("not the pinned official file")

// FetchWintun gets WintunModule through the module proxy with `goCmd mod
// download -json` (the module cache keeps it, like any module), checks
// it, and writes WintunDLL and WintunLicense into dir.
func FetchWintun(ctx context.Context, goCmd, dir string) error {
	mod, err := downloadModule(ctx, goCmd, WintunModule, WintunModuleVersion)
	if err != nil {
		return err
	}
	if mod.Sum != WintunModuleSum {
		return fmt.Errorf("wintun: %s@%s has the hash %s, not %s: %w", WintunModule, WintunModuleVersion, mod.Sum, WintunModuleSum, ErrWintunHash)
	}
	return CopyWintun(mod.Dir, dir)
}

// CopyWintun checks the amd64 wintun.dll and Wintun's licence in the
// module directory modDir against their pinned hashes and writes them into
// dir. The bytes checked are the bytes written; nothing is written unless
// both match.
func CopyWintun(modDir, dir string) error {
	dll, err := readPinned(filepath.Join(modDir, filepath.FromSlash(wintunDLLPath)), WintunSHA256)
	if err != nil {
		return err
	}
	lic, err := readPinned(filepath.Join(modDir, filepath.FromSlash(wintunLicensePath)), WintunLicenseSHA256)
	if err != nil {
		return err
	}
	if err := writeFile(filepath.Join(dir, WintunDLL), dll); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, WintunLicense), lic)
}

// CheckWintun returns nil when the file at path is the pinned wintun.dll.
func CheckWintun(path string) error {
	_, err := readPinned(path, WintunSHA256)
	return err
}

// readPinned returns the content of path when its SHA-256 is want.
func readPinned(path, want string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("wintun: %w", err)
	}
	sum := sha256.Sum256(b)
	if got := hex.EncodeToString(sum[:]); got != want {
		return nil, fmt.Errorf("wintun: %s has SHA-256 %s, not %s (wintun %s): %w", path, got, want, WintunVersion, ErrWintunHash)
	}
	return b, nil
}

// modDownload is the part of `go mod download -json`'s output used here.
type modDownload struct {
	Path, Version, Dir, Sum, Error string
}

// downloadModule runs `goCmd mod download -json path@version` outside any
// module (so that no go.mod or go.sum changes) and returns where the
// module cache holds it.
func downloadModule(ctx context.Context, goCmd, path, version string) (modDownload, error) {
	tmp, err := os.MkdirTemp("", "skiff-modfetch-")
	if err != nil {
		return modDownload{}, err
	}
	defer os.RemoveAll(tmp)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, goCmd, "mod", "download", "-json", path+"@"+version)
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	m, err := parseModDownload(stdout.Bytes(), path, version)
	if runErr != nil || err != nil {
		return modDownload{}, fmt.Errorf("wintun: %s mod download %s@%s: %w\n%s", goCmd, path, version, errors.Join(runErr, err), bytes.TrimSpace(stderr.Bytes()))
	}
	return m, nil
}

// parseModDownload decodes `go mod download -json`'s output for the one
// module asked for.
func parseModDownload(b []byte, path, version string) (modDownload, error) {
	var m modDownload
	if err := json.Unmarshal(b, &m); err != nil {
		return modDownload{}, fmt.Errorf("decode the output: %w", err)
	}
	switch {
	case m.Error != "":
		return modDownload{}, errors.New(m.Error)
	case m.Path != path || m.Version != version:
		return modDownload{}, fmt.Errorf("the output is about %s@%s", m.Path, m.Version)
	case !filepath.IsAbs(m.Dir):
		return modDownload{}, fmt.Errorf("the output's Dir %q is not an absolute path", m.Dir)
	}
	return m, nil
}

// writeFile writes data to path through a temporary file in the same
// folder renamed over it, so that path is never half-written.
func writeFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("wintun: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("wintun: write %s: %w", path, err)
	}
	return nil
}
