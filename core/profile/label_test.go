package profile

import "testing"

func TestLabel(t *testing.T) {
	sub := func(id, name, title, u string) *Subscription {
		return &Subscription{ID: id, Name: name, Title: title, URL: u}
	}
	for _, tc := range []struct {
		name string
		subs []*Subscription
		want []string
	}{
		{"unique", []*Subscription{sub("a", "", "机场", "https://a.example/s"), sub("b", "", "Other", "https://a.example/t")}, []string{"机场", "Other"}},
		{"same title, hosts differ", []*Subscription{sub("a", "", "机场", "https://a.example/s?token=x"), sub("b", "", "机场", "https://user:pw@b.example:8443/s")}, []string{"机场 (a.example)", "机场 (b.example)"}},
		{"same title, same host", []*Subscription{sub("a", "", "Airport", "https://a.example/1"), sub("b", "", "airport ", "https://a.example/2")}, []string{"Airport (a.example)", "airport (a.example) · 2"}},
		{"rename decides", []*Subscription{sub("a", "Home", "机场", "https://a.example/s"), sub("b", "", "机场", "https://b.example/s")}, []string{"Home", "机场"}},
		{"files", []*Subscription{sub("a", "", "my.yaml", ""), sub("b", "", "my.yaml", "")}, []string{"my.yaml", "my.yaml · 2"}},
		{"file and URL", []*Subscription{sub("a", "", "X", ""), sub("b", "", "X", "https://b.example/")}, []string{"X", "X (b.example)"}},
		{"no name", []*Subscription{sub("a", "", "", "https://a.example/"), sub("b", "", "", "https://a.example/")}, []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Profile{Subscriptions: tc.subs}
			seen := map[string]bool{}
			for i, s := range tc.subs {
				got := p.Label(s)
				if got != tc.want[i] {
					t.Errorf("%s: %q, want %q", s.ID, got, tc.want[i])
				}
				if got != "" && seen[got] {
					t.Errorf("%q twice", got)
				}
				seen[got] = true
			}
		})
	}
}
