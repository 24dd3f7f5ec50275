package plan

import (
	"errors"
	"fmt"

	"github.com/skiffvpn/skiff/core/inbound/mixed"
	"github.com/skiffvpn/skiff/core/profile"
)

// ErrSystemProxyAuth is returned (wrapped) when system-proxy mode is asked
// for while the local proxy asks for credentials. The desktops' proxy
// settings cannot pass them on: GNOME's and KDE's SOCKS settings hold no
// credentials at all, and most programs ignore the HTTP ones (and the
// Windows and macOS settings), so every program that follows the settings
// would be refused. Local-proxy mode, where each program is given the
// proxy URL with its credentials, or TUN mode, are the ways with auth on.
var ErrSystemProxyAuth = errors.New("system-proxy mode cannot be used while the local proxy asks for a username and password: the desktop's proxy settings cannot pass them on to programs; use the local proxy mode (give programs socks5://user:pass@…) or TUN mode, or turn proxy authentication off")

// ProxyAuth returns the local proxy's credentials from the profile's
// settings, or nil when they are off.
func ProxyAuth(s profile.Proxy) (*mixed.Auth, error) {
	if !s.AuthOn() {
		if s.Password != "" {
			return nil, errors.New("settings: proxy: a password without a username")
		}
		return nil, nil
	}
	a := &mixed.Auth{Username: s.Username, Password: s.Password}
	if err := a.Validate(); err != nil {
		return nil, fmt.Errorf("settings: %w", err)
	}
	return a, nil
}

// CheckProxy checks the profile's proxy settings.
func CheckProxy(s profile.Proxy) error {
	_, err := ProxyAuth(s)
	return err
}

// proxyAuth fills cfg's proxy credentials for a run in mode.
func proxyAuth(p *profile.Profile, mode string, pl *Plan) error {
	a, err := ProxyAuth(p.Settings.Proxy)
	if err != nil {
		return err
	}
	if a != nil && mode == ModeSystemProxy {
		return ErrSystemProxyAuth
	}
	pl.Config.ProxyAuth = a
	return nil
}
