package service

import (
	"context"

	"golang.org/x/sys/windows/svc"
)

// RunManaged runs the service under the Windows service manager when it
// started the process (reporting its state and stopping on its request),
// else in the foreground until ctx ends.
func RunManaged(ctx context.Context, o Options) error {
	if ok, err := svc.IsWindowsService(); err != nil || !ok {
		return Run(ctx, o)
	}
	return svc.Run(Name, &handler{ctx: ctx, o: o})
}

type handler struct {
	ctx context.Context
	o   Options
}

func (h *handler) Execute(_ []string, req <-chan svc.ChangeRequest, status chan<- svc.Status) (bool, uint32) {
	status <- svc.Status{State: svc.StartPending}
	ctx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, h.o) }()
	status <- svc.Status{State: svc.Running, Accepts: svc.AcceptStop | svc.AcceptShutdown}
	for {
		select {
		case err := <-done:
			if err != nil {
				return true, 1
			}
			return false, 0
		case c := <-req:
			switch c.Cmd {
			case svc.Interrogate:
				status <- c.CurrentStatus
			case svc.Stop, svc.Shutdown:
				status <- svc.Status{State: svc.StopPending}
				cancel()
			}
		}
	}
}
