package tun

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/windows"
)

// wintunModule is wintun.dll once loaded from beside the executable. A
// loaded DLL belongs to the whole process, so this does too; it is never
// freed (the wintun package keeps using it).
var wintunModule struct {
	mu   sync.Mutex
	h    windows.Handle
	path string
}

// CheckDriver loads wintun.dll from beside the executable (loadWintun); a
// *WintunError says where it must be when it is missing.
func CheckDriver() error {
	_, err := loadWintun()
	return err
}

// loadWintun loads wintun.dll by its full path beside the executable
// before golang.zx2c4.com/wintun does, and returns that path. The wintun
// package asks for "wintun.dll" by name, with
// LOAD_LIBRARY_SEARCH_APPLICATION_DIR|LOAD_LIBRARY_SEARCH_SYSTEM32, and
// Windows answers a by-name load with the module already loaded under that
// name: so it gets this one, and never falls back to a wintun.dll another
// product left in System32 (nor, by those flags, one in the current folder
// or on PATH). Its own imports (system DLLs) come from System32.
func loadWintun() (string, error) {
	m := &wintunModule
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.h != 0 {
		return m.path, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", &WintunError{Err: err}
	}
	path, err := wintunPath(exe)
	if err != nil {
		return "", err
	}
	h, err := windows.LoadLibraryEx(path, 0, windows.LOAD_LIBRARY_SEARCH_DLL_LOAD_DIR|windows.LOAD_LIBRARY_SEARCH_SYSTEM32)
	if err != nil {
		return "", &WintunError{Path: path, Err: err}
	}
	var byName windows.Handle
	err = windows.GetModuleHandleEx(windows.GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT, windows.StringToUTF16Ptr(wintunDLL), &byName)
	if err != nil || byName != h {
		windows.FreeLibrary(h)
		return "", &WintunError{Path: path, Err: errors.Join(errors.New("another wintun.dll is already loaded in this process"), err)}
	}
	m.h, m.path = h, path
	return path, nil
}
