package stats

import (
	"bytes"
	"os"
	"strconv"
)

// osRSS reads VmRSS from /proc/self/status.
func osRSS() (uint64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	return parseVmRSS(data)
}

// parseVmRSS finds "VmRSS:   1234 kB" in a /proc/PID/status file.
func parseVmRSS(status []byte) (uint64, bool) {
	for line := range bytes.Lines(status) {
		rest, ok := bytes.CutPrefix(line, []byte("VmRSS:"))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) != 2 || string(fields[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseUint(string(fields[0]), 10, 64)
		if err != nil {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
