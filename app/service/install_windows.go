package service

import (
	"fmt"
	"io"
	"time"

	"golang.org/x/sys/windows/svc"
	"golang.org/x/sys/windows/svc/mgr"
)

// Install registers exe with the service manager (LocalSystem, started at
// boot) and starts it; an exe outside %ProgramFiles% is copied there first
// (serviceBinary). Run as Administrator.
func Install(exe string, out io.Writer) error {
	exe, err := serviceBinary(exe, out)
	if err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	defer m.Disconnect()
	s, err := m.CreateService(Name, exe, mgr.Config{
		DisplayName: "Skiff VPN",
		Description: "Skiff's core: the system-wide VPN, routes and DNS, for the Skiff window and CLI.",
		StartType:   mgr.StartAutomatic,
	}, "service")
	if err != nil {
		return fmt.Errorf("service install: %w", err)
	}
	defer s.Close()
	s.SetRecoveryActions([]mgr.RecoveryAction{{Type: mgr.ServiceRestart, Delay: 2 * time.Second}}, 60)
	if err := s.Start(); err != nil {
		return fmt.Errorf("service install: start: %w", err)
	}
	fmt.Fprintln(out, "installed and started the Skiff service")
	return nil
}

// Uninstall stops and removes the service.
func Uninstall(out io.Writer) error {
	m, err := mgr.Connect()
	if err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	defer m.Disconnect()
	s, err := m.OpenService(Name)
	if err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	defer s.Close()
	if st, err := s.Control(svc.Stop); err == nil {
		for i := 0; i < 50 && st.State != svc.Stopped; i++ {
			time.Sleep(100 * time.Millisecond)
			if st, err = s.Query(); err != nil {
				break
			}
		}
	}
	if err := s.Delete(); err != nil {
		return fmt.Errorf("service uninstall: %w", err)
	}
	fmt.Fprintln(out, "removed the Skiff service")
	return nil
}
