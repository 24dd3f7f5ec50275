//go:build !(linux || freebsd || openbsd || netbsd)

package window

// trayViaDBus: the OS has a tray of its own.
const trayViaDBus = false
