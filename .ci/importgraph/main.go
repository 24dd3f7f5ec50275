// Command importgraph measures whether Skiff's folder tree reads by height:
// how many imports point from a lower folder to a higher one, and which
// sibling folders import each other (cycles).
//
// A package's level is the longest import path from it down to a leaf of the
// module's own graph (non-test imports; a leaf is 0). A folder's level is the
// highest level of a package at or below it. An import A -> B is compared
// where the two paths part: under their nearest common folder, A sits in
// sibling X and B in sibling Y (the folder's own package counts as a sibling
// of its subfolders). The import points upward when level(Y) > level(X): the
// tree places the importer below what it imports. A package that is its
// sibling folder's own package stands at its own level, not the folder's:
// a parent holds the interface its subfolders implement and import (io and
// io/fs, outbound and outbound/vless). A cycle is a set of siblings under one
// folder that import each other.
//
//	go run ./.ci/importgraph            # linux, windows and darwin together
//	go run ./.ci/importgraph -v         # and list every upward import
//	go run ./.ci/importgraph -max-upward 8 -max-cycles 0   # fail beyond
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strings"
)

type pkg struct {
	ImportPath string
	Imports    []string
	Module     *struct{ Path string }
}

func main() {
	goos := flag.String("goos", "linux,windows,darwin", "comma-separated GOOS values whose graphs are joined")
	verbose := flag.Bool("v", false, "list every upward import and every cycle")
	maxUp := flag.Int("max-upward", -1, "fail when more imports point upward (-1: report only)")
	maxCycles := flag.Int("max-cycles", -1, "fail when more sibling folders import each other (-1: report only)")
	flag.Parse()
	g, mod, err := load(strings.Split(*goos, ","))
	if err != nil {
		fmt.Fprintln(os.Stderr, "importgraph:", err)
		os.Exit(1)
	}
	r := measure(g, mod)
	fmt.Printf("packages %d, levels %d, imports %d, upward %d, cycles %d\n",
		len(g), r.levels, r.imports, len(r.upward), len(r.cycles))
	over := *maxUp >= 0 && len(r.upward) > *maxUp || *maxCycles >= 0 && len(r.cycles) > *maxCycles
	if *verbose || over {
		for _, u := range r.upward {
			fmt.Println("upward:", u)
		}
		for _, c := range r.cycles {
			fmt.Println("cycle:", c)
		}
	}
	if over {
		fmt.Fprintf(os.Stderr, "importgraph: more than %d upward imports or %d cycles\n", *maxUp, *maxCycles)
		os.Exit(1)
	}
}

// load returns the module's packages (paths relative to the module, "." for
// the root) with their in-module imports, joined over the given GOOS values.
func load(goos []string) (map[string]map[string]bool, string, error) {
	out, err := exec.Command("go", "list", "-m").Output()
	if err != nil {
		return nil, "", fmt.Errorf("go list -m: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	g := map[string]map[string]bool{}
	for _, os_ := range goos {
		cmd := exec.Command("go", "list", "-e", "-deps", "-json", "./...")
		cmd.Env = append(os.Environ(), "GOOS="+strings.TrimSpace(os_))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, "", fmt.Errorf("go list -deps (GOOS=%s): %w", os_, err)
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var p pkg
			if err := dec.Decode(&p); err == io.EOF {
				break
			} else if err != nil {
				return nil, "", fmt.Errorf("decode go list: %w", err)
			}
			if p.Module == nil || p.Module.Path != mod {
				continue
			}
			from := rel(mod, p.ImportPath)
			if g[from] == nil {
				g[from] = map[string]bool{}
			}
			for _, imp := range p.Imports {
				if imp == mod || strings.HasPrefix(imp, mod+"/") {
					g[from][rel(mod, imp)] = true
				}
			}
		}
	}
	return g, mod, nil
}

func rel(mod, path string) string {
	if path == mod {
		return "."
	}
	return strings.TrimPrefix(path, mod+"/")
}

type result struct {
	levels  int
	imports int
	upward  []string
	cycles  []string
}

func measure(g map[string]map[string]bool, _ string) result {
	level := map[string]int{}
	var height func(p string) int
	height = func(p string) int {
		if l, ok := level[p]; ok {
			return l
		}
		level[p] = 0 // Go forbids package cycles; this only guards the walk
		h := 0
		for q := range g[p] {
			if l := height(q) + 1; l > h {
				h = l
			}
		}
		level[p] = h
		return h
	}
	var r result
	for p := range g {
		if l := height(p); l+1 > r.levels {
			r.levels = l + 1
		}
	}
	// folder level: the highest package level at or below the folder; a
	// folder's own package is the sibling "<folder>/." of its subfolders.
	folder := map[string]int{}
	for p, l := range level {
		for _, f := range prefixes(p) {
			if l > folder[f] {
				folder[f] = l
			}
		}
	}
	// where a package stands among its siblings: the folder's level, or its
	// own when it is the folder's own package (io below io/fs, outbound below
	// outbound/vless: subfolders implement and import their parent).
	at := func(p, sibling string) int {
		if p == sibling {
			return level[p]
		}
		return folder[sibling]
	}
	// sibling graph per common folder, for cycles
	sib := map[string]map[string]map[string]bool{}
	for a, imps := range g {
		for b := range imps {
			r.imports++
			parent, x, y := part(a, b)
			lx, ly := at(a, x), at(b, y)
			if ly > lx {
				r.upward = append(r.upward, fmt.Sprintf("%s -> %s (%s %d < %s %d)", a, b, x, lx, y, ly))
			}
			if sib[parent] == nil {
				sib[parent] = map[string]map[string]bool{}
			}
			if sib[parent][x] == nil {
				sib[parent][x] = map[string]bool{}
			}
			sib[parent][x][y] = true
		}
	}
	sort.Strings(r.upward)
	for _, s := range sib {
		r.cycles = append(r.cycles, cycles(s)...)
	}
	sort.Strings(r.cycles)
	return r
}

// prefixes lists the folders a package counts toward: its own "p/." and
// every folder above it, ending with ".".
func prefixes(p string) []string {
	if p == "." {
		return []string{"./.", "."}
	}
	out := []string{p + "/."}
	parts := strings.Split(p, "/")
	for i := len(parts); i > 0; i-- {
		out = append(out, strings.Join(parts[:i], "/"))
	}
	return append(out, ".")
}

// part returns the nearest common folder of a and b and the sibling under it
// that holds each ("<folder>/." when the package is the folder's own).
func part(a, b string) (parent, x, y string) {
	split := func(p string) []string {
		if p == "." {
			return nil
		}
		return strings.Split(p, "/")
	}
	as, bs := split(a), split(b)
	i := 0
	for i < len(as) && i < len(bs) && as[i] == bs[i] {
		i++
	}
	join := func(s []string) string {
		if len(s) == 0 {
			return "."
		}
		return strings.Join(s, "/")
	}
	parent = join(as[:i])
	child := func(s []string) string {
		if i == len(s) {
			return join(s) + "/."
		}
		return join(s[:i+1])
	}
	return parent, child(as), child(bs)
}

// cycles returns the strongly connected sets (of more than one sibling) in a
// sibling graph, by Tarjan's algorithm.
func cycles(g map[string]map[string]bool) []string {
	index, low := map[string]int{}, map[string]int{}
	on := map[string]bool{}
	var stack, out []string
	n := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		on[v] = true
		for w := range g[v] {
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var scc []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				scc = append(scc, w)
				if w == v {
					break
				}
			}
			if len(scc) > 1 {
				sort.Strings(scc)
				out = append(out, strings.Join(scc, " <-> "))
			}
		}
	}
	keys := make([]string, 0, len(g))
	for k := range g {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, seen := index[k]; !seen {
			visit(k)
		}
	}
	return out
}
