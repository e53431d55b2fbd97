package arch_test

import (
	"go/build"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gpu-rightsizing/recommender/"

// allowed is, for each package, the module's packages it may import: the
// data flow of DESIGN §2, from the pure leaves (usage, kai) through the
// decision math (engine) and the readers (checkout, policy, metrics,
// patcher) to the stages (plan), the shells (scm, publish, live) and the
// command that wires them. A new import that is not here is a decision:
// change this table with it, or import the other way round.
var allowed = map[string][]string{
	"internal/usage":    {},
	"internal/kai":      {},
	"internal/checkout": {},
	"internal/scm":      {},
	"internal/testenv":  {},
	"internal/arch":     {},
	"internal/deploy":   {},
	"internal/engine":   {"internal/kai", "internal/usage"},
	"internal/policy":   {"internal/checkout", "internal/engine", "internal/usage"},
	"internal/metrics":  {"internal/usage"},
	"internal/patcher":  {"internal/checkout", "internal/kai", "internal/usage"},
	"internal/backtest": {"internal/engine", "internal/kai", "internal/metrics", "internal/patcher", "internal/policy", "internal/usage"},
	"internal/plan":     {"internal/checkout", "internal/engine", "internal/kai", "internal/patcher", "internal/policy", "internal/usage"},
	"internal/publish":  {"internal/engine", "internal/plan", "internal/scm", "internal/usage"},
	"internal/live":     {"internal/engine", "internal/kai", "internal/scm"},
	"internal/fastpath": {"internal/engine", "internal/kai", "internal/live", "internal/plan", "internal/publish"},
	"internal/config":   {"internal/checkout", "internal/policy", "internal/scm"},
	"cmd/recommender": {"internal/backtest", "internal/config", "internal/fastpath", "internal/kai", "internal/live", "internal/metrics",
		"internal/patcher", "internal/plan", "internal/publish", "internal/scm", "internal/usage"},
}

// packages lists the module's packages (not test files), from the
// directories under the module root.
func packages(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, top := range []string{"internal", "cmd"} {
		entries, err := os.ReadDir(filepath.Join("..", "..", top))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.IsDir() {
				out = append(out, top+"/"+e.Name())
			}
		}
	}
	return out
}

// TestLayers: every package imports only what the table allows, and the
// table knows every package. A wrong-way import fails here.
func TestLayers(t *testing.T) {
	for _, p := range packages(t) {
		want, ok := allowed[p]
		if !ok {
			t.Errorf("%s is not in the layering table: add it, with what it may import", p)
			continue
		}
		pkg, err := build.Import(module+p, ".", 0)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, imp := range pkg.Imports {
			rel, ok := strings.CutPrefix(imp, module)
			if ok && !slices.Contains(want, rel) {
				t.Errorf("%s imports %s, which the layering does not allow", p, rel)
			}
		}
	}
}

// TestLayoutNamesEveryPackage: docs/project-layout.md has a row for every
// package, and none for a package that is gone.
func TestLayoutNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "project-layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	for _, p := range packages(t) {
		if !strings.Contains(doc, "| `"+p+"`") {
			t.Errorf("docs/project-layout.md has no row for %s", p)
		}
	}
	for _, line := range strings.Split(doc, "\n") {
		if path, ok := strings.CutPrefix(line, "| `"); ok {
			path, _, _ = strings.Cut(path, "`")
			if strings.HasPrefix(path, "internal/") || strings.HasPrefix(path, "cmd/") {
				if _, err := os.Stat(filepath.Join("..", "..", path)); err != nil {
					t.Errorf("docs/project-layout.md names %s, which does not exist", path)
				}
			}
		}
	}
}
