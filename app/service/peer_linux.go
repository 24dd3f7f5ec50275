package service

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// procGroups reads the supplementary groups of process pid.
func procGroups(pid int) ([]int, error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "Groups:")
		if !ok {
			continue
		}
		var out []int
		for _, s := range strings.Fields(rest) {
			if g, err := strconv.Atoi(s); err == nil {
				out = append(out, g)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("/proc/%d/status: no Groups line", pid)
}
