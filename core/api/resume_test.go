package api

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/core"
	"github.com/skiffvpn/skiff/core/plan"
	"github.com/skiffvpn/skiff/core/profile"
)

// TestResume: a Local started over the state a previous one left connects
// again as it was, when the profile asks for it and the user had not
// disconnected; a broken record is refused and removed.
func TestResume(t *testing.T) {
	for _, tc := range []struct {
		name       string
		atStart    bool
		disconnect bool   // the user disconnected before the stop
		record     string // overwrites the record before the restart; "" keeps it
		want       core.State
		wantErr    bool
	}{
		{name: "connected, setting on", atStart: true, want: core.Running},
		{name: "connected, setting off", atStart: false, want: core.Stopped},
		{name: "disconnected by the user", atStart: true, disconnect: true, want: core.Stopped},
		{name: "bad record", atStart: true, record: `{"mode":"bogus"}`, want: core.Stopped, wantErr: true},
		{name: "unknown field", atStart: true, record: `{"mode":"proxy","path":"/etc"}`, want: core.Stopped, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			dir := t.TempDir()
			open := func() *Local {
				store, err := profile.Open(dir)
				if err != nil {
					t.Fatal(err)
				}
				return NewLocal(core.NewController(core.Options{LogOutput: io.Discard}), store, nil)
			}
			l := open()
			if _, err := l.Import(ctx, ImportRequest{Body: hy2Link}); err != nil {
				t.Fatal(err)
			}
			if err := l.update(func(p *profile.Profile) error { p.Settings.ConnectAtStart = tc.atStart; return nil }); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Connect(ctx, plan.Request{Listen: "127.0.0.1:0"}); err != nil {
				t.Fatal(err)
			}
			if tc.disconnect {
				if err := l.Disconnect(ctx); err != nil {
					t.Fatal(err)
				}
			}
			l.Close() // the service stopping: the record stays
			record := filepath.Join(dir, ConnectionFile)
			if tc.record != "" {
				if err := os.WriteFile(record, []byte(tc.record), 0o600); err != nil {
					t.Fatal(err)
				}
			}

			l = open()
			defer l.Close()
			rt, err := l.Resume(ctx)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Resume: %+v %v", rt, err)
			}
			if st, _ := l.Status(ctx); st.State != tc.want {
				t.Errorf("after Resume: %s, want %s", st.State, tc.want)
			}
			if tc.want == core.Running && (rt == nil || len(rt.IDs) != 1) {
				t.Errorf("route %+v", rt)
			}
			if _, err := os.Stat(record); tc.wantErr && !os.IsNotExist(err) {
				t.Errorf("a bad record was kept: %v", err)
			}
		})
	}
}
