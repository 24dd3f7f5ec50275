package sysproxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/windows"
	"golang.org/x/sys/windows/registry"
)

// wininet is Windows' per-user proxy settings, WinINet's values in
// HKCU\...\Internet Settings, which Edge, Chrome, .NET and most Windows
// programs follow; InternetSetOption tells the running ones. Keys are the
// value names; ProxyEnable is a DWORD, the others strings.
type wininet struct{}

const wininetKey = `Software\Microsoft\Windows\CurrentVersion\Internet Settings`

var wininetValues = map[string]uint32{"ProxyEnable": registry.DWORD, "ProxyServer": registry.SZ, "ProxyOverride": registry.SZ}

func (wininet) name() string { return "wininet" }

func (wininet) available(context.Context) error {
	k, err := registry.OpenKey(registry.CURRENT_USER, wininetKey, registry.QUERY_VALUE)
	if err != nil {
		return fmt.Errorf("opening HKCU\\%s: %w", wininetKey, err)
	}
	k.Close()
	return nil
}

func (wininet) plan(_ context.Context, c Config) ([]Setting, error) {
	return []Setting{
		{Key: "ProxyServer", Value: c.Addr.String()},
		{Key: "ProxyOverride", Value: strings.Join(wininetBypass(c.bypass()), ";")},
		{Key: "ProxyEnable", Value: "1"},
	}, nil
}

func (wininet) get(_ context.Context, name string) (Setting, error) {
	typ, ok := wininetValues[name]
	if !ok {
		return Setting{}, errors.New("not a WinINet proxy value: " + name)
	}
	k, err := registry.OpenKey(registry.CURRENT_USER, wininetKey, registry.QUERY_VALUE)
	if err != nil {
		return Setting{}, err
	}
	defer k.Close()
	s := Setting{Key: name}
	var v string
	if typ == registry.DWORD {
		var n uint64
		if n, _, err = k.GetIntegerValue(name); err == nil {
			v = strconv.FormatUint(n, 10)
		}
	} else {
		v, _, err = k.GetStringValue(name)
	}
	switch {
	case errors.Is(err, registry.ErrNotExist):
		s.Unset = true
	case err != nil:
		return Setting{}, err
	default:
		s.Value = v
	}
	return s, nil
}

func (wininet) set(_ context.Context, s Setting) error {
	typ, ok := wininetValues[s.Key]
	if !ok {
		return errors.New("not a WinINet proxy value: " + s.Key)
	}
	k, err := registry.OpenKey(registry.CURRENT_USER, wininetKey, registry.SET_VALUE)
	if err != nil {
		return err
	}
	defer k.Close()
	switch {
	case s.Unset:
		if err := k.DeleteValue(s.Key); err != nil && !errors.Is(err, registry.ErrNotExist) {
			return err
		}
		return nil
	case typ == registry.DWORD:
		v, err := strconv.ParseUint(s.Value, 10, 32)
		if err != nil {
			return fmt.Errorf("%s: %q is not a number", s.Key, s.Value)
		}
		return k.SetDWordValue(s.Key, uint32(v))
	}
	return k.SetStringValue(s.Key, s.Value)
}

var (
	modwininet            = windows.NewLazySystemDLL("wininet.dll")
	procInternetSetOption = modwininet.NewProc("InternetSetOptionW")
)

// WinINet options that make running programs read the settings again.
const (
	internetOptionSettingsChanged = 39
	internetOptionRefresh         = 37
)

func (wininet) changed(context.Context) error {
	if err := procInternetSetOption.Find(); err != nil {
		return fmt.Errorf("wininet.dll: %w", err)
	}
	r, _, err := procInternetSetOption.Call(0, internetOptionSettingsChanged, uintptr(unsafe.Pointer(nil)), 0)
	if r == 0 {
		return fmt.Errorf("InternetSetOption(INTERNET_OPTION_SETTINGS_CHANGED): %w", err)
	}
	// REFRESH makes running programs read the settings now rather than
	// at their next request. It is a courtesy: the settings are written
	// either way, and Wine answers it with ERROR_INTERNET_INCORRECT_HANDLE_TYPE.
	procInternetSetOption.Call(0, internetOptionRefresh, uintptr(unsafe.Pointer(nil)), 0)
	return nil
}
