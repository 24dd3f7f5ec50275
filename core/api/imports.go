package api

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"time"

	"github.com/skiffvpn/skiff/core/profile"
	"github.com/skiffvpn/skiff/core/protocol"
	"github.com/skiffvpn/skiff/core/subscription"
)

// Import implements Backend.
func (l *Local) Import(ctx context.Context, r ImportRequest) (*ImportResult, error) {
	switch {
	case r.URL != "" && r.Body != "":
		return nil, errorf(CodeBadRequest, "import: give a URL or a body, not both")
	case r.URL != "":
		u, ok := subscription.NormalizeURL(r.URL)
		if !ok {
			return nil, errorf(CodeBadRequest, "import: not a subscription URL")
		}
		return l.importURL(ctx, u, r.Name)
	case r.Body != "":
		if len(r.Source) > 255 || strings.ContainsFunc(r.Source, func(c rune) bool { return c < ' ' || c == 0x7f }) {
			return nil, errorf(CodeBadRequest, "import: source: not a file name")
		}
		return l.importBody([]byte(r.Body), r.Source)
	}
	return nil, errorf(CodeBadRequest, "import: nothing to import")
}

func (l *Local) importBody(body []byte, source string) (*ImportResult, error) {
	res, err := subscription.Parse(body)
	out := result(res)
	if err != nil {
		return out, errorf(CodeBadRequest, "import: "+err.Error())
	}
	err = l.update(func(p *profile.Profile) error {
		if source == "" {
			out.Added = subscription.AddNodes(p, res.Nodes)
			return nil
		}
		sub, isNew := subscription.FileSubscription(p, source)
		before := map[string]bool{}
		for _, n := range p.Nodes {
			if n.Subscription == sub.ID {
				before[n.ID] = true
			}
		}
		subscription.Apply(p, sub, res, time.Now().UTC())
		for _, n := range p.Nodes {
			if n.Subscription == sub.ID && !before[n.ID] {
				out.Added++
			}
		}
		out.Subscription, out.Existing = sub.ID, !isNew
		return nil
	})
	if err != nil {
		return out, err
	}
	return out, nil
}

// importURL adds a subscription (or finds it by URL) and refreshes it. A new
// subscription whose first refresh fails is removed again.
func (l *Local) importURL(ctx context.Context, rawURL, name string) (*ImportResult, error) {
	var id string
	isNew := false
	err := l.update(func(p *profile.Profile) error {
		for _, s := range p.Subscriptions {
			if s.URL == rawURL {
				id = s.ID
				if name != "" {
					s.Name = name
				}
				return nil
			}
		}
		var b [6]byte
		rand.Read(b[:])
		id = "s" + hex.EncodeToString(b[:])
		isNew = true
		p.Subscriptions = append(p.Subscriptions, &profile.Subscription{ID: id, URL: rawURL, Name: name, Title: subscription.Redact(rawURL)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	out, err := l.refresh(ctx, id)
	out.Existing = !isNew
	if err != nil && isNew {
		l.update(func(p *profile.Profile) error {
			subs := p.Subscriptions[:0]
			for _, s := range p.Subscriptions {
				if s.ID != id {
					subs = append(subs, s)
				}
			}
			p.Subscriptions = subs
			return nil
		})
		out.Subscription = ""
	}
	return out, err
}

// Refresh implements Backend.
func (l *Local) Refresh(ctx context.Context, id string) (*ImportResult, error) {
	p, err := l.store.Load()
	if p == nil {
		return nil, err
	}
	s := p.Subscription(id)
	if s == nil {
		return nil, errorf(CodeNotFound, "subscription "+id+": not in the profile")
	}
	if s.URL == "" {
		return nil, errorf(CodeBadRequest, "subscription "+s.DisplayName()+": imported from a file, it has no URL to refresh (import the file again)")
	}
	return l.refresh(ctx, id)
}

func (l *Local) refresh(ctx context.Context, id string) (*ImportResult, error) {
	l.pmu.Lock()
	res, err := subscription.Refresh(ctx, l.store, l.fetcher, id)
	l.pmu.Unlock()
	l.profileChanged()
	out := result(res)
	out.Subscription = id
	if err != nil {
		e := errorf(CodeSubscriptionFetch, err.Error())
		out.Error = e
		return out, e
	}
	return out, nil
}

// result summarises a parse.
func result(res *subscription.Result) *ImportResult {
	out := &ImportResult{}
	if res == nil {
		return out
	}
	out.Format = string(res.Format)
	out.Nodes = len(res.Nodes)
	for _, n := range res.Nodes {
		if ok, why := protocol.Supported(n); !ok {
			out.Unsupported = append(out.Unsupported, n.Name+": "+why)
		}
	}
	for _, w := range res.Warnings {
		out.Warnings = append(out.Warnings, w.String())
	}
	return out
}
