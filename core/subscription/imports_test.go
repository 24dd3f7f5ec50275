package subscription

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoesNotImportTheEngine: subscription is data (fetching, parsing,
// the schedule) and must not pull in the engine, package core; what Skiff
// can dial it asks core/protocol, a leaf.
func TestDoesNotImportTheEngine(t *testing.T) {
	const module = "github.com/skiffvpn/skiff/"
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string][]string{} // package -> the import chain that reached it
	var walk func(pkg string, chain []string)
	walk = func(pkg string, chain []string) {
		if _, ok := seen[pkg]; ok {
			return
		}
		chain = append(chain, pkg)
		seen[pkg] = chain
		p, err := build.ImportDir(filepath.Join(root, strings.TrimPrefix(pkg, module)), 0)
		if err != nil {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) {
				walk(imp, chain)
			}
		}
	}
	walk(module+"core/subscription", nil)
	if chain, ok := seen[module+"core"]; ok {
		t.Errorf("core/subscription imports package core: %s", strings.Join(chain, " → "))
	}
}
