// Package assets holds Skiff's icons, drawn for it as simple SVGs (a small
// sailing boat) with PNG renderings, embedded so the binary needs no files
// beside it. It has no GUI dependency: app/ wraps the bytes as resources.
package assets

import _ "embed"

// AppIcon is the application icon (256×256 PNG).
//
//go:embed icon.png
var AppIcon []byte

// TrayOn is the tray icon while the core is connected (64×64 PNG).
//
//go:embed tray-on.png
var TrayOn []byte

// TrayOff is the tray icon while the core is stopped (64×64 PNG).
//
//go:embed tray-off.png
var TrayOff []byte
