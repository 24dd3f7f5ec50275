package netmon

import (
	"context"
	"errors"
	"net"
	"sync"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// watchOS subscribes to rtnetlink's route, address and link groups and
// reports what can break a connection that is up: a default route in the
// main table that came, went or changed, an address that went (not a new
// one: a container's bridge is no reason to re-dial), an interface that
// went down or away or came up. The ignored interface's changes are left
// out.
func watchOS(ctx context.Context, wg *sync.WaitGroup, ignore string, report func(string)) error {
	done := make(chan struct{})
	routes := make(chan netlink.RouteUpdate, 64)
	addrs := make(chan netlink.AddrUpdate, 64)
	links := make(chan netlink.LinkUpdate, 64)
	var errs []error
	onErr := func(err error) {} // a closed subscription ends its channel
	if err := netlink.RouteSubscribeWithOptions(routes, done, netlink.RouteSubscribeOptions{ErrorCallback: onErr}); err != nil {
		errs = append(errs, err)
		routes = nil
	}
	if err := netlink.AddrSubscribeWithOptions(addrs, done, netlink.AddrSubscribeOptions{ErrorCallback: onErr}); err != nil {
		errs = append(errs, err)
		addrs = nil
	}
	if err := netlink.LinkSubscribeWithOptions(links, done, netlink.LinkSubscribeOptions{ErrorCallback: onErr}); err != nil {
		errs = append(errs, err)
		links = nil
	}
	if routes == nil && addrs == nil && links == nil {
		close(done)
		return errors.Join(errs...)
	}
	ignored := func(index int) bool {
		if ignore == "" || index == 0 {
			return false
		}
		l, err := netlink.LinkByIndex(index)
		return err == nil && l.Attrs().Name == ignore
	}
	wasUp := map[int]bool{} // by interface index, as last seen
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for routes != nil || addrs != nil || links != nil {
			select {
			case <-ctx.Done():
				return
			case u, ok := <-routes:
				if !ok {
					routes = nil
					continue
				}
				isDefault := u.Dst == nil || u.Dst.IP == nil
				if u.Dst != nil {
					ones, _ := u.Dst.Mask.Size()
					isDefault = ones == 0
				}
				if isDefault && (u.Table == unix.RT_TABLE_MAIN || u.Table == 0) && !ignored(u.LinkIndex) {
					report("route")
				}
			case u, ok := <-addrs:
				if !ok {
					addrs = nil
					continue
				}
				if !u.NewAddr && !ignored(u.LinkIndex) && !u.LinkAddress.IP.IsLinkLocalUnicast() {
					report("addr")
				}
			case u, ok := <-links:
				if !ok {
					links = nil
					continue
				}
				a := u.Attrs()
				if a == nil || a.Name == ignore {
					continue
				}
				up := a.Flags&net.FlagUp != 0 && a.OperState != netlink.OperDown
				if u.Header.Type == unix.RTM_DELLINK {
					delete(wasUp, a.Index)
					report("link")
				} else if was, seen := wasUp[a.Index]; seen && was != up {
					wasUp[a.Index] = up
					report("link")
				} else {
					wasUp[a.Index] = up
				}
			}
		}
	}()
	return errors.Join(errs...)
}
