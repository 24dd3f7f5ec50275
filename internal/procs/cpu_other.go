//go:build !unix && !windows

package procs

import (
	"errors"
	"time"
)

// processCPU is unknown here: Govern leaves the runtime's choice alone.
func processCPU() (time.Duration, error) { return 0, errors.ErrUnsupported }
