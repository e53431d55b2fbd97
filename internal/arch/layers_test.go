package arch_test

import (
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gpu-rightsizing/recommender/"

// allowed is, for each package, the module's packages it may import: the
// data flow of docs/design.md §2, from the pure leaves (usage, kai, located)
// through the decision math (engine) and the readers (checkout, policy,
// metrics, patcher) to the stages (plan), the shells (scm, publish, live)
// and the command that wires them. A new import that is not here is a decision:
// change this table with it, or import the other way round.
var allowed = map[string][]string{
	"internal/usage":               {},
	"internal/located":             {},
	"internal/jsonindent":          {},
	"internal/kai":                 {},
	"internal/cluster":             {"internal/kai", "internal/localfile"},
	"internal/checkout":            {"internal/located"},
	"internal/localfile":           {},
	"internal/scm":                 {"internal/localfile"},
	"internal/testenv":             {},
	"internal/testenv/forge":       {"internal/testenv"},
	"internal/testenv/kubeenv":     {"internal/testenv"},
	"internal/testenv/rusage":      {},
	"internal/arch":                {},
	"internal/deploy":              {},
	"internal/release":             {},
	"internal/engine":              {"internal/kai", "internal/usage"},
	"internal/clustermap":          {"internal/checkout", "internal/located", "internal/policy"},
	"internal/policy":              {"internal/checkout", "internal/engine", "internal/located", "internal/usage"},
	"internal/consolidate":         {"internal/engine", "internal/kai", "internal/usage"},
	"internal/placement":           {"internal/cluster", "internal/consolidate", "internal/kai", "internal/metrics", "internal/usage"},
	"internal/metrics":             {"internal/kai", "internal/usage"},
	"internal/neighbours":          {"internal/kai", "internal/metrics", "internal/usage"},
	"internal/metrics/openmetrics": {"internal/located", "internal/metrics", "internal/usage"},
	"internal/metrics/metricstest": {"internal/metrics", "internal/metrics/openmetrics", "internal/usage"},
	"internal/metrics/preset":      {"internal/usage"},
	"internal/metrics/prometheus":  {"internal/localfile", "internal/metrics", "internal/usage"},
	"internal/patcher/splice":      {"internal/checkout", "internal/located"},
	"internal/patcher/changes":     {"internal/patcher/splice", "internal/usage"},
	"internal/patcher/workload":    {"internal/kai", "internal/located", "internal/patcher/changes", "internal/patcher/splice", "internal/usage"},
	"internal/patcher/patchdiff":   {"internal/patcher/splice"},
	"internal/patcher/kustomize": {"internal/checkout", "internal/patcher/changes", "internal/patcher/patchdiff", "internal/patcher/splice",
		"internal/patcher/workload", "internal/usage"},
	"internal/patcher/helm": {"internal/checkout", "internal/located", "internal/patcher/changes", "internal/patcher/kustomize",
		"internal/patcher/splice", "internal/patcher/workload", "internal/usage"},
	"internal/patcher": {"internal/checkout", "internal/located", "internal/usage", "internal/patcher/changes",
		"internal/patcher/helm", "internal/patcher/kustomize", "internal/patcher/splice", "internal/patcher/workload"},
	"internal/backtest": {"internal/engine", "internal/kai", "internal/metrics/openmetrics", "internal/patcher", "internal/policy", "internal/usage"},
	"internal/plan":     {"internal/checkout", "internal/engine", "internal/jsonindent", "internal/kai", "internal/located", "internal/patcher", "internal/policy", "internal/usage"},
	"internal/publish":  {"internal/engine", "internal/plan", "internal/scm", "internal/usage"},
	"internal/live":     {"internal/cluster", "internal/engine", "internal/kai", "internal/scm"},
	"internal/report":   {"internal/cluster", "internal/consolidate", "internal/dashboard", "internal/engine", "internal/kai", "internal/metrics", "internal/neighbours", "internal/placement", "internal/plan", "internal/policy", "internal/usage"},
	"internal/config":   {"internal/checkout", "internal/located", "internal/policy", "internal/scm"},
	"internal/dashboard": {"internal/consolidate", "internal/engine", "internal/plan",
		"internal/publish", "internal/scm", "internal/usage"},
	"internal/summary":    {"internal/engine", "internal/live", "internal/plan", "internal/publish"},
	"internal/runmetrics": {"internal/localfile", "internal/summary"},
	"internal/notify":     {"internal/summary"},
	"internal/metrics/source": {"internal/config", "internal/metrics", "internal/metrics/openmetrics", "internal/metrics/preset", "internal/metrics/prometheus",
		"internal/neighbours", "internal/placement", "internal/plan", "internal/usage"},
	// run is the use case: every step of a run, wired. It imports what
	// the steps need and nothing imports it but the command.
	"internal/run": {"internal/cluster", "internal/config", "internal/dashboard", "internal/engine", "internal/kai", "internal/live",
		"internal/metrics/prometheus", "internal/metrics/source", "internal/notify", "internal/plan", "internal/publish",
		"internal/report", "internal/runmetrics", "internal/scm", "internal/summary"},
	// The command parses flags and a config file into each command's
	// options, calls the use case and maps its outcome to an exit code.
	"cmd/recommender": {"internal/backtest", "internal/clustermap", "internal/config", "internal/metrics/source", "internal/plan", "internal/report", "internal/run"},
}

// packages lists the module's packages (not test files): every directory
// under internal and cmd that holds Go files, nested ones included, so
// that a sub-package is held to the table as its parent is. testdata and
// the directories the go command ignores (".x", "_x") hold none.
func packages(t *testing.T) []string {
	t.Helper()
	root := filepath.Join("..", "..")
	var out []string
	for _, top := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d os.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return err
			}
			if name := d.Name(); name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
				return filepath.SkipDir
			}
			goFiles, err := filepath.Glob(filepath.Join(path, "*.go"))
			if err != nil || len(goFiles) == 0 {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			out = append(out, filepath.ToSlash(rel))
			return nil
		})
		if err != nil {
			t.Fatal(err)
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

// layoutWords is the most words docs/project-layout.md may hold outside
// its code blocks: a map people scan, the detail in each package's doc.
const layoutWords = 1000

// TestLayoutNamesEveryPackage: docs/project-layout.md has a row for every
// package, and none for a package that is gone; it stays a page people
// scan, and every package it names has a doc comment to read on.
func TestLayoutNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "project-layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	if n := proseWords(doc); n > layoutWords {
		t.Errorf("docs/project-layout.md has %d words outside code blocks, more than %d: move detail into the package's doc comment", n, layoutWords)
	}
	for _, p := range packages(t) {
		if !hasPackageDoc(t, p) {
			t.Errorf("%s has no package doc comment", p)
		}
	}
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

// proseWords counts the words of a Markdown text outside fenced code
// blocks, table punctuation left out.
func proseWords(doc string) int {
	n, fenced := 0, false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, w := range strings.Fields(line) {
			if strings.Trim(w, "|-:") != "" {
				n++
			}
		}
	}
	return n
}

// hasPackageDoc reports whether any non-test file of the package at the
// module-relative path p carries a package doc comment.
func hasPackageDoc(t *testing.T, p string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", p, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if af.Doc != nil && strings.TrimSpace(af.Doc.Text()) != "" {
			return true
		}
	}
	return false
}
