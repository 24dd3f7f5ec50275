package procs

import (
	"time"

	"golang.org/x/sys/windows"
)

// processCPU returns the CPU time (user and kernel) the process has used.
func processCPU() (time.Duration, error) {
	var created, exited, kernel, user windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &created, &exited, &kernel, &user); err != nil {
		return 0, err
	}
	// FILETIMEs count 100 ns intervals.
	ticks := int64(kernel.HighDateTime)<<32 | int64(kernel.LowDateTime)
	ticks += int64(user.HighDateTime)<<32 | int64(user.LowDateTime)
	return time.Duration(ticks * 100), nil
}
