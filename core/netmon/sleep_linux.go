package netmon

import (
	"context"
	"sync"

	"github.com/godbus/dbus/v5"
)

// watchSleep reports "resume" when logind says the machine woke up
// (org.freedesktop.login1.Manager.PrepareForSleep(false)): at once, not at
// the clock watcher's next tick. Without a system bus or logind (a
// container, a namespace) it reports nothing and the clock watcher
// remains.
func watchSleep(ctx context.Context, wg *sync.WaitGroup, report func(string)) error {
	conn, err := dbus.ConnectSystemBus(dbus.WithContext(ctx))
	if err != nil {
		return err
	}
	if err := conn.AddMatchSignal(
		dbus.WithMatchInterface("org.freedesktop.login1.Manager"),
		dbus.WithMatchMember("PrepareForSleep"),
		dbus.WithMatchObjectPath("/org/freedesktop/login1"),
	); err != nil {
		conn.Close()
		return err
	}
	signals := make(chan *dbus.Signal, 8)
	conn.Signal(signals)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer conn.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case s, ok := <-signals:
				if !ok {
					return
				}
				if len(s.Body) == 1 {
					if sleeping, ok := s.Body[0].(bool); ok && !sleeping {
						report("resume")
					}
				}
			}
		}
	}()
	return nil
}
