//go:build !linux && !darwin && !windows

package netmon

import (
	"context"
	"errors"
	"runtime"
	"sync"
)

func watchOS(context.Context, *sync.WaitGroup, string, func(string)) error {
	return errors.New("no network change notifications on " + runtime.GOOS)
}
