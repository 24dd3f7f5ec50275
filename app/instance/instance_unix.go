//go:build linux || darwin

package instance

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/skiffvpn/skiff/internal/peercred"
)

// errTaken: another process holds the instance.
var errTaken = errors.New("taken")

// DefaultDir is where the sockets live: $XDG_RUNTIME_DIR/skiff (a per-user
// tmpfs on Linux), else the user's config dir.
func DefaultDir() (string, error) {
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "skiff"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "skiff", "run"), nil
}

func paths(cfg Config) (dir, sock, lock string, err error) {
	dir = cfg.Dir
	if dir == "" {
		if dir, err = DefaultDir(); err != nil {
			return "", "", "", err
		}
	}
	return dir, filepath.Join(dir, cfg.Name+".sock"), filepath.Join(dir, cfg.Name+".lock"), nil
}

// privateDir makes dir (0700) and checks that it is ours and nobody
// else's: not a symlink, owned by this user, no group or other access.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok {
		return fmt.Errorf("%s is not a directory", dir)
	}
	if int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to uid %d, not to this user (%d)", dir, sys.Uid, os.Geteuid())
	}
	if st.Mode().Perm()&0o077 != 0 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// listen takes the instance's lock (flock: released by the kernel when
// the process dies, so a crash leaves nothing to clean) and listens on its
// socket, which is created 0600 under a temporary name and renamed into
// place. errTaken: another process holds the lock. release removes the
// socket and lets go of the lock.
func listen(cfg Config) (net.Listener, func(), error) {
	dir, sock, lock, err := paths(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := privateDir(dir); err != nil {
		return nil, nil, err
	}
	f, err := os.OpenFile(lock, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil, errTaken
		}
		return nil, nil, fmt.Errorf("locking %s: %w", lock, err)
	}
	// We hold the lock: a socket there is a dead primary's.
	os.Remove(sock)
	tmp := fmt.Sprintf("%s.%d", sock, os.Getpid())
	os.Remove(tmp)
	// The umask makes the socket 0600 from the start: the directory is
	// 0700 anyway, this is the second wall.
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", tmp)
	syscall.Umask(old)
	if err == nil {
		ln.(*net.UnixListener).SetUnlinkOnClose(false)
		if err = os.Rename(tmp, sock); err != nil {
			ln.Close()
			os.Remove(tmp)
		}
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	// Released after the listener closed: the socket goes first, so the
	// next primary never finds a live one in its way.
	release := func() {
		os.Remove(sock)
		f.Close()
	}
	return ln, release, nil
}

func dial(ctx context.Context, cfg Config) (net.Conn, error) {
	dir, sock, _, err := paths(cfg)
	if err != nil {
		return nil, err
	}
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	var d net.Dialer
	return d.DialContext(ctx, "unix", sock)
}

// checkPeer admits a client of this user only.
func checkPeer(c net.Conn) error { return sameUser(c) }

// checkServer hands arguments only to a primary of this user.
func checkServer(c net.Conn) error { return sameUser(c) }

// sameUser checks that the process at the other end of c runs as this
// user (the kernel's record of it, taken at connect or listen).
func sameUser(c net.Conn) error {
	cred, err := peercred.Read(c)
	if err != nil {
		return err
	}
	if cred.UID != os.Geteuid() {
		return fmt.Errorf("the peer is uid %d, not this user (%d)", cred.UID, os.Geteuid())
	}
	return nil
}
