package subscription

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skiffvpn/skiff/internal/fetchguard"
)

// TestFetchGuard runs the SSRF of issue 28 against the default client: a
// provider's redirect to a loopback admin URL. Both servers are on
// loopback; the provider is the one the user typed as "localhost", and its
// redirect names another host, 127.0.0.1, so the rule is tested as it
// is: only the typed host may be local. The admin server is never asked.
func TestFetchGuard(t *testing.T) {
	var adminHits atomic.Int32
	admin := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		adminHits.Add(1)
		w.Write([]byte(uriList))
	}))
	defer admin.Close()
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/sub":
			w.Write([]byte(uriList))
		case "/self":
			http.Redirect(w, r, "/sub", http.StatusFound)
		default:
			http.Redirect(w, r, admin.URL+"/admin/reboot", http.StatusFound)
		}
	}))
	defer provider.Close()
	typedProvider := strings.Replace(provider.URL, "127.0.0.1", "localhost", 1)
	ctx := context.Background()
	f := &Fetcher{} // the client the service uses

	// The user's own local converter works, typed as an IP or a name,
	// and so does its redirect to itself.
	for _, u := range []string{admin.URL + "/sub", typedProvider + "/sub", typedProvider + "/self"} {
		if _, err := f.Fetch(ctx, u); err != nil {
			t.Errorf("fetch of typed %s: %v", u, err)
		}
	}
	hits := adminHits.Load()
	_, err := f.Fetch(ctx, typedProvider+"/redirect?token=SECRET")
	if !errors.Is(err, fetchguard.ErrRefused) || !strings.Contains(err.Error(), "loopback") {
		t.Errorf("redirect to a loopback URL of another host: %v, want a refusal that says loopback", err)
	}
	if err != nil && strings.Contains(err.Error(), "SECRET") {
		t.Errorf("error leaks the token: %v", err)
	}
	if adminHits.Load() != hits {
		t.Error("the redirect reached the admin server")
	}

	// Link-local (a cloud's metadata service) is never fetched, typed or
	// not; the refusal comes before any connection.
	start := time.Now()
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[fe80::1]:80/", "http://0.0.0.0:8080/", "http://224.0.0.1/"} {
		if _, err := f.Fetch(ctx, u); !errors.Is(err, fetchguard.ErrRefused) {
			t.Errorf("fetch of %s: %v, want a refusal", u, err)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refusals took %v: something was dialed", d)
	}
}
