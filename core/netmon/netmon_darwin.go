package netmon

import (
	"context"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// watchOS reads the route socket: route, address and interface messages.
// (The ignored interface is not filtered out here: the messages of
// Skiff's own utun come only while it opens, and the settling merges them.)
func watchOS(ctx context.Context, wg *sync.WaitGroup, _ string, report func(string)) error {
	fd, err := unix.Socket(unix.AF_ROUTE, unix.SOCK_RAW, unix.AF_UNSPEC)
	if err != nil {
		return fmt.Errorf("netmon: route socket: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return fmt.Errorf("netmon: route socket: %w", err)
	}
	f := os.NewFile(uintptr(fd), "route") // through the poller: Close ends a Read
	wg.Add(2)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		f.Close()
	}()
	go func() {
		defer wg.Done()
		buf := make([]byte, 2048)
		for {
			n, err := f.Read(buf)
			if err != nil {
				return
			}
			if n < 4 {
				continue
			}
			switch buf[3] { // rt_msghdr: msglen u16, version u8, type u8
			case unix.RTM_ADD, unix.RTM_DELETE, unix.RTM_CHANGE:
				report("route")
			case unix.RTM_NEWADDR, unix.RTM_DELADDR:
				report("addr")
			case unix.RTM_IFINFO:
				report("link")
			}
		}
	}()
	return nil
}
