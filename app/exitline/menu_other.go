//go:build !windows

package exitline

// menuDrawsFlags: the trays of Linux's desktops and of macOS draw emoji.
const menuDrawsFlags = true
