package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/skiffvpn/skiff/internal/version"
)

func TestVersionCommand(t *testing.T) {
	want := "skiff " + version.Get().String() + "\n"
	for _, arg := range []string{"--version", "-version", "version"} {
		var out, errb bytes.Buffer
		if code := Main([]string{arg}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", arg, code, errb.String())
		}
		if out.String() != want {
			t.Errorf("%s printed %q, want %q", arg, out.String(), want)
		}
	}
}
