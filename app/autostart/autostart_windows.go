package autostart

import (
	"errors"
	"fmt"

	"golang.org/x/sys/windows/registry"
)

// RunKey is where a user's programs started at login are listed, and
// RunValue the tray's value in it (the installer writes the same one).
const (
	RunKey   = `Software\Microsoft\Windows\CurrentVersion\Run`
	RunValue = "Skiff"
)

func (it *Item) enabled() (bool, error) {
	k, err := registry.OpenKey(registry.CURRENT_USER, RunKey, registry.QUERY_VALUE)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("autostart: HKCU\\%s: %w", RunKey, err)
	}
	defer k.Close()
	_, _, err = k.GetStringValue(RunValue)
	if errors.Is(err, registry.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("autostart: HKCU\\%s\\%s: %w", RunKey, RunValue, err)
	}
	return true, nil
}

func (it *Item) set(on bool) error {
	k, _, err := registry.CreateKey(registry.CURRENT_USER, RunKey, registry.SET_VALUE)
	if err != nil {
		return fmt.Errorf("autostart: HKCU\\%s: %w", RunKey, err)
	}
	defer k.Close()
	if !on {
		if err := k.DeleteValue(RunValue); err != nil && !errors.Is(err, registry.ErrNotExist) {
			return fmt.Errorf("autostart: deleting HKCU\\%s\\%s: %w", RunKey, RunValue, err)
		}
		return nil
	}
	if it.Tray == "" {
		return errors.New("autostart: no tray path")
	}
	if err := k.SetStringValue(RunValue, `"`+it.Tray+`"`); err != nil {
		return fmt.Errorf("autostart: HKCU\\%s\\%s: %w", RunKey, RunValue, err)
	}
	return nil
}
