package sysproxy

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/godbus/dbus/v5"
)

// kde is KDE Plasma's proxy settings: the [Proxy Settings] group of
// kioslaverc, written with kwriteconfig (6 on Plasma 6, else 5) and
// announced to KIO over D-Bus so that running apps read it again. Keys
// are the file's keys; an absent key reads as empty and is put back by
// deleting it.
type kde struct {
	tools
	// bus announces the change; nil: the session bus.
	bus func() error
}

const kdeGroup = "Proxy Settings"

// kdeKeys are the keys Skiff sets, the only ones it touches.
var kdeKeys = map[string]bool{"ProxyType": true, "httpProxy": true, "httpsProxy": true, "socksProxy": true, "NoProxyFor": true, "ReversedException": true}

func (k kde) name() string { return "kde" }

// programs returns kwriteconfig and kreadconfig of the newest KDE Frameworks
// installed.
func (k kde) programs() (write, read string, err error) {
	for _, v := range []string{"6", "5"} {
		if k.has("kwriteconfig"+v) == nil && k.has("kreadconfig"+v) == nil {
			return "kwriteconfig" + v, "kreadconfig" + v, nil
		}
	}
	return "", "", fmt.Errorf("kwriteconfig6/kwriteconfig5: %w", errNotFound)
}

func (k kde) available(context.Context) error {
	_, _, err := k.programs()
	return err
}

func (k kde) plan(_ context.Context, c Config) ([]Setting, error) {
	// KDE writes "scheme://host port", with a space before the port.
	hp := c.Addr.Addr().String() + " " + fmt.Sprint(c.Addr.Port())
	if c.Addr.Addr().Is6() {
		hp = "[" + c.Addr.Addr().String() + "] " + fmt.Sprint(c.Addr.Port())
	}
	return []Setting{
		{Key: "httpProxy", Value: "http://" + hp},
		{Key: "httpsProxy", Value: "http://" + hp},
		{Key: "socksProxy", Value: "socks://" + hp},
		{Key: "NoProxyFor", Value: strings.Join(c.bypass(), ",")},
		{Key: "ReversedException", Value: "false"},
		{Key: "ProxyType", Value: "1"}, // 1: manual; last, when the rest is in place
	}, nil
}

func (k kde) get(ctx context.Context, key string) (Setting, error) {
	if !kdeKeys[key] {
		return Setting{}, errors.New("not a KDE proxy key: " + key)
	}
	_, read, err := k.programs()
	if err != nil {
		return Setting{}, err
	}
	out, err := k.run(ctx, read, "--file", "kioslaverc", "--group", kdeGroup, "--key", key)
	if err != nil {
		return Setting{}, err
	}
	v := strings.TrimRight(out, "\n")
	return Setting{Key: key, Value: v, Unset: v == ""}, nil
}

func (k kde) set(ctx context.Context, s Setting) error {
	if !kdeKeys[s.Key] {
		return errors.New("not a KDE proxy key: " + s.Key)
	}
	write, _, err := k.programs()
	if err != nil {
		return err
	}
	if s.Unset {
		_, err = k.run(ctx, write, "--file", "kioslaverc", "--group", kdeGroup, "--key", s.Key, "--delete")
	} else {
		_, err = k.run(ctx, write, "--file", "kioslaverc", "--group", kdeGroup, "--key", s.Key, s.Value)
	}
	return err
}

// changed tells KIO to read its configuration again. Without a session
// bus there is no running KDE app to tell.
func (k kde) changed(context.Context) error {
	if k.bus != nil {
		return k.bus()
	}
	if !sessionBus() {
		return nil
	}
	conn, err := dbus.ConnectSessionBus()
	if err != nil {
		return fmt.Errorf("telling KIO: %w", err)
	}
	defer conn.Close()
	if err := conn.Emit("/KIO/Scheduler", "org.kde.KIO.Scheduler.reparseSlaveConfiguration", ""); err != nil {
		return fmt.Errorf("telling KIO: %w", err)
	}
	return nil
}
