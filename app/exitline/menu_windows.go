package exitline

// menuDrawsFlags: the Win32 menu's font (Segoe UI) draws a flag's
// regional indicators as letters.
const menuDrawsFlags = false
