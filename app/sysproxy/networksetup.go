package sysproxy

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// networksetup is macOS's proxy settings, per network service (Wi-Fi,
// Ethernet, …), read and written with networksetup(8); Safari, Chrome and
// the system's URL loading follow them. Skiff sets the web (HTTP), secure
// web (HTTPS) and SOCKS proxies and the bypass list of every enabled
// service. Keys are "kind service": kind is web, secureweb, socks or
// bypass. A proxy's value is "on|off host port"; the bypass list's is its
// domains, one a line.
type networksetup struct {
	tools
}

const nsTool = "/usr/sbin/networksetup"

func (n networksetup) name() string { return "networksetup" }

func (n networksetup) available(context.Context) error { return n.has(nsTool) }

// services lists the enabled network services. The first line of
// -listallnetworkservices is a note; a disabled service starts with "*".
func (n networksetup) services(ctx context.Context) ([]string, error) {
	out, err := n.run(ctx, nsTool, "-listallnetworkservices")
	if err != nil {
		return nil, err
	}
	var svcs []string
	for i, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if i == 0 && strings.Contains(l, "asterisk") || l == "" || strings.HasPrefix(l, "*") {
			continue
		}
		svcs = append(svcs, l)
	}
	if len(svcs) == 0 {
		return nil, errors.New("no enabled network service")
	}
	return svcs, nil
}

// nsKinds maps a key's kind to networksetup's verbs (get, set, set state).
var nsKinds = map[string][3]string{
	"web":       {"-getwebproxy", "-setwebproxy", "-setwebproxystate"},
	"secureweb": {"-getsecurewebproxy", "-setsecurewebproxy", "-setsecurewebproxystate"},
	"socks":     {"-getsocksfirewallproxy", "-setsocksfirewallproxy", "-setsocksfirewallproxystate"},
}

func (n networksetup) plan(ctx context.Context, c Config) ([]Setting, error) {
	svcs, err := n.services(ctx)
	if err != nil {
		return nil, err
	}
	on := "on " + c.Addr.Addr().String() + " " + strconv.Itoa(int(c.Addr.Port()))
	var out []Setting
	for _, s := range svcs {
		out = append(out,
			Setting{Key: "bypass " + s, Value: strings.Join(c.bypass(), "\n")},
			Setting{Key: "web " + s, Value: on},
			Setting{Key: "secureweb " + s, Value: on},
			Setting{Key: "socks " + s, Value: on})
	}
	return out, nil
}

func nsKey(k string) (kind, svc string, err error) {
	kind, svc, ok := strings.Cut(k, " ")
	if _, known := nsKinds[kind]; !ok || svc == "" || (!known && kind != "bypass") {
		return "", "", errors.New("not a networksetup proxy key: " + k)
	}
	return kind, svc, nil
}

func (n networksetup) get(ctx context.Context, k string) (Setting, error) {
	kind, svc, err := nsKey(k)
	if err != nil {
		return Setting{}, err
	}
	if kind == "bypass" {
		out, err := n.run(ctx, nsTool, "-getproxybypassdomains", svc)
		if err != nil {
			return Setting{}, err
		}
		var ds []string
		for _, l := range strings.Split(out, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "There aren't any") {
				ds = append(ds, l)
			}
		}
		return Setting{Key: k, Value: strings.Join(ds, "\n"), Unset: len(ds) == 0}, nil
	}
	out, err := n.run(ctx, nsTool, nsKinds[kind][0], svc)
	if err != nil {
		return Setting{}, err
	}
	// Enabled: Yes / Server: 127.0.0.1 / Port: 7890 / Authenticated Proxy Enabled: 0
	state, host, port := "off", "", "0"
	for _, l := range strings.Split(out, "\n") {
		f, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(f) {
		case "Enabled":
			if v == "Yes" {
				state = "on"
			}
		case "Server":
			host = v
		case "Port":
			port = v
		}
	}
	return Setting{Key: k, Value: strings.TrimSpace(state + " " + host + " " + port)}, nil
}

func (n networksetup) set(ctx context.Context, s Setting) error {
	kind, svc, err := nsKey(s.Key)
	if err != nil {
		return err
	}
	if kind == "bypass" {
		args := []string{"-setproxybypassdomains", svc}
		if s.Unset || s.Value == "" {
			args = append(args, "Empty")
		} else {
			args = append(args, strings.Split(s.Value, "\n")...)
		}
		_, err := n.run(ctx, nsTool, args...)
		return err
	}
	f := strings.Fields(s.Value)
	if len(f) == 2 { // "off 0": no server was ever set
		f = []string{f[0], "", f[1]}
	}
	if len(f) != 3 || (f[0] != "on" && f[0] != "off") {
		return fmt.Errorf("networksetup: bad value %q for %s", s.Value, s.Key)
	}
	verbs := nsKinds[kind]
	if f[1] != "" {
		// Setting the server also turns the proxy on; the state follows.
		if _, err := n.run(ctx, nsTool, verbs[1], svc, f[1], f[2]); err != nil {
			return err
		}
	}
	_, err = n.run(ctx, nsTool, verbs[2], svc, f[0])
	return err
}

func (n networksetup) changed(context.Context) error { return nil } // configd tells its readers
