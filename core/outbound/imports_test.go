package outbound

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestProtocolsImportNoOther checks that no protocol package under
// core/outbound imports another: what two protocols share goes in
// core/outbound/internal or a leaf (core/node), not in one of them.
func TestProtocolsImportNoOther(t *testing.T) {
	const prefix = "github.com/skiffvpn/skiff/core/outbound/"
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "internal" {
			continue
		}
		files, err := filepath.Glob(filepath.Join(d.Name(), "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			checked++
			for _, imp := range ast.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				other, ok := strings.CutPrefix(path, prefix)
				if !ok || strings.HasPrefix(other, "internal/") {
					continue
				}
				if first, _, _ := strings.Cut(other, "/"); first != d.Name() {
					t.Errorf("%s imports %s: protocols share through core/outbound/internal or core/node", f, path)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no protocol package found")
	}
}
