package autostart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skiffvpn/skiff/internal/atomicfile"
)

// AgentLabel is the LaunchAgent's label and, with ".plist", its file name.
const AgentLabel = "io.github.skiffvpn.skiff.tray"

func agentPath() (string, error) {
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("autostart: %w", err)
	}
	return filepath.Join(home, "Library", "LaunchAgents", AgentLabel+".plist"), nil
}

func (it *Item) enabled() (bool, error) {
	p, err := agentPath()
	if err != nil {
		return false, err
	}
	_, err = os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (it *Item) set(on bool) error {
	p, err := agentPath()
	if err != nil {
		return err
	}
	if !on {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("autostart: %w", err)
		}
		return nil
	}
	if !filepath.IsAbs(it.Tray) {
		return fmt.Errorf("autostart: the tray's path %q is not absolute", it.Tray)
	}
	var tray bytes.Buffer
	xml.EscapeText(&tray, []byte(it.Tray))
	plist := `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
	<key>Label</key>
	<string>` + AgentLabel + `</string>
	<key>ProgramArguments</key>
	<array>
		<string>` + tray.String() + `</string>
	</array>
	<key>RunAtLoad</key>
	<true/>
	<key>ProcessType</key>
	<string>Interactive</string>
</dict>
</plist>
`
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("autostart: %w", err)
	}
	if err := atomicfile.WriteFile(p, []byte(plist), 0o644); err != nil {
		return fmt.Errorf("autostart: writing %s: %w", p, err)
	}
	return nil
}
