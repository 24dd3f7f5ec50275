package profile

import (
	"net/url"
	"strconv"
	"strings"
)

// Label is how subscription s of p is named in lists: its DisplayName, told
// apart from another subscription of p with the same name (two providers
// both calling themselves "机场") by its host, "Title (a.example)", or,
// when the hosts match too, by its place, "Title · 2" (the first keeps the
// plain name). It is "" when s has no name; the caller then names it by
// its address.
func (p *Profile) Label(s *Subscription) string {
	name := strings.TrimSpace(s.DisplayName())
	if name == "" {
		return ""
	}
	var same []*Subscription
	for _, o := range p.Subscriptions {
		if strings.EqualFold(strings.TrimSpace(o.DisplayName()), name) {
			same = append(same, o)
		}
	}
	if len(same) < 2 {
		return name
	}
	hosts := map[string]int{}
	for _, o := range same {
		hosts[subHost(o)]++
	}
	if h := subHost(s); h != "" && hosts[h] == 1 {
		return name + " (" + h + ")"
	}
	// Numbered among those that share its host (or have none).
	n := 0
	for _, o := range same {
		if subHost(o) == subHost(s) {
			n++
		}
		if o == s || o.ID == s.ID {
			break
		}
	}
	if n <= 1 {
		if h := subHost(s); h != "" {
			return name + " (" + h + ")"
		}
		return name
	}
	if h := subHost(s); h != "" {
		return name + " (" + h + ") · " + strconv.Itoa(n)
	}
	return name + " · " + strconv.Itoa(n)
}

// subHost is the host of s's URL without port or credentials; "" for a
// file's import.
func subHost(s *Subscription) string {
	if s.URL == "" {
		return ""
	}
	u, err := url.Parse(s.URL)
	if err != nil {
		return ""
	}
	return u.Hostname()
}
