// Package exepages hands the kernel back the pages of the program's own
// executable that the process has mapped but no longer uses.
//
// Why: a Go binary's code, read-only data and function tables are mapped
// from the executable file, and the kernel maps each page a process touches
// together with the cached pages around it (fault-around, 64 KiB on Linux).
// Start-up touches most of them: every package's init, flag and command
// tables, the runtime walking its own tables. Measured on `skiff service`
// idle on Linux, 15 of its 17.5 MiB of RSS were such pages
// (RssFile), though in the 20 s that followed it read only 0.4 MiB of them.
// They are clean copies of the file, so unmapping them loses nothing: a
// page that is needed again is mapped again from the page cache (or read
// from the file). What the process then holds is what it uses.
//
// What it saves: the process's resident set (RSS, PSS), which is what
// users and benchmarks read. The pages themselves stay in the page cache
// until the kernel needs the memory; unmapped, they are the first it
// reclaims, and without touching this process. So it is a real saving
// under memory pressure and only an accounting one without it.
//
// Only Linux maps it this way and counts it so: Windows' Task Manager and
// macOS's footprint leave clean image pages out already. Elsewhere Release
// does nothing.
package exepages
