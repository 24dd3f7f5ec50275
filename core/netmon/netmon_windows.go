package netmon

import (
	"context"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The IP Helper notifications call back on a thread of their own through
// a C callback; Go can make only a limited number of those per process,
// so there is one per kind, made once, that hands the change to every
// running watcher.
var (
	cbOnce                   sync.Once
	routeCB, addrCB, ifaceCB uintptr
	watchersMu               sync.Mutex
	watchers                 = map[*func(string)]struct{}{}
)

func notifyAll(reason string) {
	watchersMu.Lock()
	defer watchersMu.Unlock()
	for f := range watchers {
		(*f)(reason)
	}
}

// watchOS registers for route (NotifyRouteChange2), unicast address
// (NotifyUnicastIpAddressChange) and interface (NotifyIpInterfaceChange)
// changes of both families, and cancels them when ctx ends.
func watchOS(ctx context.Context, wg *sync.WaitGroup, _ string, report func(string)) error {
	cbOnce.Do(func() {
		routeCB = windows.NewCallback(func(_, _ uintptr, _ uint32) uintptr { notifyAll("route"); return 0 })
		addrCB = windows.NewCallback(func(_, _ uintptr, _ uint32) uintptr { notifyAll("addr"); return 0 })
		ifaceCB = windows.NewCallback(func(_, _ uintptr, _ uint32) uintptr { notifyAll("link"); return 0 })
	})
	var handles []windows.Handle
	cancel := func() {
		for _, h := range handles {
			windows.CancelMibChangeNotify2(h)
		}
	}
	for _, n := range []struct {
		name string
		fn   func(uint16, uintptr, unsafe.Pointer, bool, *windows.Handle) error
		cb   uintptr
	}{
		{"NotifyRouteChange2", windows.NotifyRouteChange2, routeCB},
		{"NotifyUnicastIpAddressChange", windows.NotifyUnicastIpAddressChange, addrCB},
		{"NotifyIpInterfaceChange", windows.NotifyIpInterfaceChange, ifaceCB},
	} {
		var h windows.Handle
		if err := n.fn(windows.AF_UNSPEC, n.cb, nil, false, &h); err != nil {
			cancel()
			return fmt.Errorf("netmon: %s: %w", n.name, err)
		}
		handles = append(handles, h)
	}
	f := &report
	watchersMu.Lock()
	watchers[f] = struct{}{}
	watchersMu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		cancel() // waits for callbacks in progress
		watchersMu.Lock()
		delete(watchers, f)
		watchersMu.Unlock()
	}()
	return nil
}
