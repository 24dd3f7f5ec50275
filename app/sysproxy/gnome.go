package sysproxy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// gnome is GNOME's proxy settings (GSettings org.gnome.system.proxy, kept
// by dconf), which GNOME's apps, GIO's proxy resolver, libproxy and
// Chromium-based browsers follow. Keys are "schema key"; values are
// GVariant text as `gsettings get` prints and `gsettings set` takes it.
type gnome struct {
	tools
}

const gnomeSchema = "org.gnome.system.proxy"

func (g gnome) name() string { return "gnome" }

func (g gnome) available(ctx context.Context) error {
	if err := g.has("gsettings"); err != nil {
		return err
	}
	// Without a session bus gsettings writes to a memory backend that
	// nothing reads: saying it worked would be a lie.
	if !sessionBus() {
		return errors.New("gsettings: no D-Bus session (DBUS_SESSION_BUS_ADDRESS is empty)")
	}
	if _, err := g.run(ctx, "gsettings", "list-keys", gnomeSchema); err != nil {
		return err
	}
	return nil
}

// sessionBus reports whether this process can reach a D-Bus session bus.
func sessionBus() bool {
	if os.Getenv("DBUS_SESSION_BUS_ADDRESS") != "" {
		return true
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); d != "" {
		if fi, err := os.Stat(filepath.Join(d, "bus")); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return true
		}
	}
	return false
}

func (g gnome) plan(_ context.Context, c Config) ([]Setting, error) {
	host := gvString(c.Addr.Addr().String())
	port := strconv.Itoa(int(c.Addr.Port()))
	var ignore []string
	for _, b := range c.bypass() {
		ignore = append(ignore, gvString(b))
	}
	s := func(schema, key, v string) Setting { return Setting{Key: schema + " " + key, Value: v} }
	return []Setting{
		s(gnomeSchema+".http", "host", host), s(gnomeSchema+".http", "port", port),
		s(gnomeSchema+".https", "host", host), s(gnomeSchema+".https", "port", port),
		s(gnomeSchema+".socks", "host", host), s(gnomeSchema+".socks", "port", port),
		s(gnomeSchema, "ignore-hosts", "["+strings.Join(ignore, ", ")+"]"),
		s(gnomeSchema, "mode", gvString("manual")), // last: the others are ready when it turns on
	}, nil
}

// splitKey splits "schema key" and checks it is one of GNOME's proxy keys.
func splitKey(k string) (schema, key string, err error) {
	schema, key, ok := strings.Cut(k, " ")
	if !ok || (schema != gnomeSchema && !strings.HasPrefix(schema, gnomeSchema+".")) || key == "" {
		return "", "", errors.New("not a GNOME proxy key: " + k)
	}
	return schema, key, nil
}

// dconfPath is where dconf keeps a key of the proxy schemas:
// org.gnome.system.proxy.http port is /system/proxy/http/port.
func dconfPath(schema, key string) string {
	rest := strings.TrimPrefix(schema, gnomeSchema)
	return "/system/proxy" + strings.ReplaceAll(rest, ".", "/") + "/" + key
}

func (g gnome) get(ctx context.Context, k string) (Setting, error) {
	schema, key, err := splitKey(k)
	if err != nil {
		return Setting{}, err
	}
	out, err := g.run(ctx, "gsettings", "get", schema, key)
	if err != nil {
		return Setting{}, err
	}
	s := Setting{Key: k, Value: strings.TrimSpace(out)}
	// dconf tells a value the user set from the schema's default, so that
	// a default is put back as a default (gsettings reset), not as a
	// value that happens to equal it.
	if g.has("dconf") == nil {
		if d, err := g.run(ctx, "dconf", "read", dconfPath(schema, key)); err == nil && strings.TrimSpace(d) == "" {
			s.Unset = true
		}
	}
	return s, nil
}

func (g gnome) set(ctx context.Context, s Setting) error {
	schema, key, err := splitKey(s.Key)
	if err != nil {
		return err
	}
	if s.Unset {
		_, err = g.run(ctx, "gsettings", "reset", schema, key)
	} else {
		_, err = g.run(ctx, "gsettings", "set", schema, key, s.Value)
	}
	return err
}

func (g gnome) changed(context.Context) error { return nil } // dconf tells its readers

// gvString quotes s as a GVariant string.
func gvString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`)
	return "'" + r.Replace(s) + "'"
}
