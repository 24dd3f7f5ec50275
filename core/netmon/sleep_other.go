//go:build !linux

package netmon

import (
	"context"
	"errors"
	"sync"
)

// watchSleep: the resume notifications of Windows (power broadcasts) and
// macOS (IOKit) need a window or cgo; the clock watcher covers them.
func watchSleep(context.Context, *sync.WaitGroup, func(string)) error {
	return errors.New("no sleep notifications here")
}
