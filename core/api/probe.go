package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// maxProbe bounds the nodes of one Probe call, and probeParallel how many
// are tested at once.
const (
	maxProbe      = 4096
	probeParallel = 8
)

// Probe implements Backend.
func (l *Local) Probe(ctx context.Context, ids []string) ([]ProbeResult, error) {
	if len(ids) > maxProbe {
		return nil, errorf(CodeBadRequest, fmt.Sprintf("probe: at most %d nodes at once", maxProbe))
	}
	p, err := l.store.Load()
	if p == nil {
		return nil, err
	}
	out := make([]ProbeResult, len(ids))
	sem := make(chan struct{}, probeParallel)
	var wg sync.WaitGroup
	for i, id := range ids {
		out[i].ID = id
		n := p.Node(id)
		if n == nil {
			out[i].Error = errorf(CodeNotFound, "no node "+id)
			continue
		}
		if n.Unsupported != "" {
			out[i].Error = errorf(CodeBadRequest, n.Unsupported)
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			cfg := n.Config
			rtt, err := l.ctrl.Probe(ctx, &cfg, p.Settings.ProbeURL)
			if err != nil {
				out[i].Error = Wrap(err)
				out[i].Timeout = errors.Is(err, context.DeadlineExceeded) || strings.Contains(err.Error(), "timeout")
				return
			}
			out[i].Latency = rtt
		}()
	}
	wg.Wait()
	return out, nil
}
