package sysproxy

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/skiffvpn/skiff/internal/atomicfile"
)

// envFile is a shell snippet that sets http_proxy, https_proxy, all_proxy
// and no_proxy (both cases) for new shells and the programs started from
// them (curl, git, pip, apt…), which follow no desktop setting. It exists
// only while the system proxy is on. The user's shell reads it through
// one line in ~/.profile or ~/.bashrc (EnvHook); Skiff does not edit
// those files.
//
// Why not ~/.config/environment.d: systemd reads it once, when the user's
// session starts, so a crash would leave every app of the next session
// with a dead proxy until Skiff starts again, and it never reaches a
// session already running. The snippet instead checks that the process
// that wrote it is still alive before it exports anything: after a crash
// or kill -9 it sets nothing, even before Skiff restores it.
type envFile struct {
	path string
}

// EnvName is the snippet's name in the directory given to New.
const EnvName = "proxy.env"

// EnvHook is the line that makes a POSIX shell read the snippet.
func EnvHook(dir string) string {
	p := filepath.Join(dir, EnvName)
	return `[ -r "` + p + `" ] && . "` + p + `"`
}

func (e envFile) name() string { return "shell" }

func (e envFile) available(context.Context) error { return nil }

func (e envFile) plan(_ context.Context, c Config) ([]Setting, error) {
	return []Setting{{Key: e.path, Value: envText(c, os.Getpid(), e.path)}}, nil
}

// envText is the snippet at path for c, written by process pid.
func envText(c Config, pid int, path string) string {
	http := "http://" + c.Addr.String()
	socks := "socks5h://" + c.Addr.String()
	var no []string
	for _, b := range c.bypass() {
		// Programs take suffixes (".local"), not globs.
		no = append(no, strings.TrimPrefix(b, "*"))
	}
	var b strings.Builder
	b.WriteString("# Written by Skiff while its system proxy is on, removed when it is off.\n")
	b.WriteString("# Read by new shells through this line in ~/.profile or ~/.bashrc:\n")
	fmt.Fprintf(&b, "#   %s\n", EnvHook(filepath.Dir(path)))
	fmt.Fprintf(&b, "if kill -0 %d 2>/dev/null; then\n", pid)
	for _, kv := range [][2]string{{"http_proxy", http}, {"https_proxy", http}, {"all_proxy", socks}, {"no_proxy", strings.Join(no, ",")}} {
		fmt.Fprintf(&b, "\texport %s='%s' %s='%s'\n", kv[0], kv[1], strings.ToUpper(kv[0]), kv[1])
	}
	b.WriteString("fi\n")
	return b.String()
}

func (e envFile) check(key string) error {
	if key != e.path {
		return errors.New("not Skiff's environment file: " + key)
	}
	return nil
}

func (e envFile) get(_ context.Context, key string) (Setting, error) {
	if err := e.check(key); err != nil {
		return Setting{}, err
	}
	b, err := os.ReadFile(key)
	if errors.Is(err, fs.ErrNotExist) {
		return Setting{Key: key, Unset: true}, nil
	}
	if err != nil {
		return Setting{}, err
	}
	return Setting{Key: key, Value: string(b)}, nil
}

func (e envFile) set(_ context.Context, s Setting) error {
	if err := e.check(s.Key); err != nil {
		return err
	}
	if s.Unset {
		if err := os.Remove(s.Key); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(s.Key), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(s.Key, []byte(s.Value), 0o600)
}

func (e envFile) changed(context.Context) error { return nil }
