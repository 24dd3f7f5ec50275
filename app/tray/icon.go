package tray

import (
	"encoding/binary"
	"runtime"

	"github.com/skiffvpn/skiff/assets"
)

// Tray icons as the OS tray takes them: PNG, except on Windows, whose
// tray wants an .ico (one holding the PNG is enough since Vista).
var (
	iconOn  = trayIcon(assets.TrayOn)
	iconOff = trayIcon(assets.TrayOff)
)

func trayIcon(png []byte) []byte {
	if runtime.GOOS != "windows" {
		return png
	}
	return pngICO(png, 64)
}

// pngICO wraps a size×size PNG in an .ico file of one image.
func pngICO(png []byte, size int) []byte {
	b := make([]byte, 0, 22+len(png))
	b = binary.LittleEndian.AppendUint16(b, 0) // reserved
	b = binary.LittleEndian.AppendUint16(b, 1) // type: icon
	b = binary.LittleEndian.AppendUint16(b, 1) // one image
	b = append(b, byte(size%256), byte(size%256), 0, 0)
	b = binary.LittleEndian.AppendUint16(b, 1)  // colour planes
	b = binary.LittleEndian.AppendUint16(b, 32) // bits per pixel
	b = binary.LittleEndian.AppendUint32(b, uint32(len(png)))
	b = binary.LittleEndian.AppendUint32(b, 22) // the image's offset
	return append(b, png...)
}
