//go:build !(linux || freebsd || openbsd || netbsd)

package app

// trayViaDBus: the OS has a tray of its own.
const trayViaDBus = false
