//go:build linux || freebsd || openbsd || netbsd

package window

// trayViaDBus: the tray is a StatusNotifierItem on the session bus.
const trayViaDBus = true
