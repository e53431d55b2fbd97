package arch_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// speedRows are the rows of BENCHMARKS.md's speed summary and where
// `make bench-e2e` commits each figure: the package's testdata file,
// then the names of its ratio, its second ratio ("" for none) and its
// CPU exponent.
var speedRows = map[string][4]string{
	"`plan`, 10,000 Deployments, ten a file, all edited":                {"cmd/recommender", "plan-per10-all-cpu-ratio", "plan-per10-all-floor-ratio", "plan-per10-all-exponent"},
	"`plan`, 10,000 Deployments, ten a file, one in ten edited":         {"cmd/recommender", "plan-per10-tenth-cpu-ratio", "plan-per10-tenth-floor-ratio", "plan-per10-tenth-exponent"},
	"`plan --write`, 10,000 Deployments, one a file, all edited":        {"cmd/recommender", "write-per1-all-cpu-ratio", "write-per1-all-floor-ratio", "write-per1-all-exponent"},
	"`plan --write`, 10,000 Deployments, one a file, one in ten edited": {"cmd/recommender", "write-per1-tenth-cpu-ratio", "write-per1-tenth-floor-ratio", "write-per1-tenth-exponent"},
	"opening a recording, 1,000 pods × a week at 30 s":                  {"internal/metrics/openmetrics", "cpu-ratio", "rss-ratio", "cpu-exponent"},
	"`plan` of a recording, 1,000 pods × a week at 30 s":                {"internal/metrics/openmetrics", "cli-cpu-ratio", "cli-rss-ratio", "cpu-exponent"},
	"Prometheus, 2,000 pods × a day at 30 s":                            {"internal/metrics/prometheus", "cpu-ratio", "rss-ratio", "cpu-exponent"},
	"`plan --write`, 300 overlays over 5 bases":                         {"internal/patcher/kustomize", "cpu-ratio", "floor-ratio", "cpu-exponent"},
	"`run --scm local`, 10,000 changes":                                 {"cmd/recommender", "run-local-fast-import-ratio", "", "run-local-exponent"},
}

// TestBenchmarksSpeedSummary: each row of BENCHMARKS.md's speed summary
// (between "<!-- summary-speed -->" and "<!-- /summary-speed -->") states
// the ratios and the exponent its package's testdata/bench-e2e.json
// commits, the figures `make bench-e2e` checks a run against.
func TestBenchmarksSpeedSummary(t *testing.T) {
	root := filepath.Join("..", "..")
	md, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?s)<!-- summary-speed -->\n(.*?)<!-- /summary-speed -->`).FindSubmatch(md)
	if m == nil {
		t.Fatal("BENCHMARKS.md has no <!-- summary-speed --> block")
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(m[1])), "\n")[2:] {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 7 {
			t.Errorf("BENCHMARKS.md speed summary: %q: want 7 cells, got %d", line, len(cells))
			continue
		}
		row, ok := speedRows[cells[0]]
		if !ok {
			t.Errorf("BENCHMARKS.md speed summary: %q: no such stage in speedRows", cells[0])
			continue
		}
		seen[cells[0]] = true
		figures := readFigures(t, filepath.Join(root, row[0], "testdata", "bench-e2e.json"))
		want := []string{ratio(t, figures, row[1]), "", exponent(t, figures, row[3])}
		if row[2] != "" {
			want[1] = ratio(t, figures, row[2])
		}
		for i, w := range want {
			if got := cells[2+i]; got != w {
				t.Errorf("BENCHMARKS.md speed summary, %s, column %d: %q, but %s/testdata/bench-e2e.json commits %q", cells[0], 3+i, got, row[0], w)
			}
		}
	}
	for name := range speedRows {
		if !seen[name] {
			t.Errorf("BENCHMARKS.md speed summary has no row %q", name)
		}
	}
}

func readFigures(t *testing.T, path string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

func ratio(t *testing.T, figures map[string]float64, name string) string {
	t.Helper()
	v, ok := figures[name]
	if !ok {
		t.Fatalf("bench-e2e.json has no %q", name)
	}
	return fmt.Sprintf("%.2f×", v)
}

func exponent(t *testing.T, figures map[string]float64, name string) string {
	t.Helper()
	v, ok := figures[name]
	if !ok {
		t.Fatalf("bench-e2e.json has no %q", name)
	}
	return fmt.Sprintf("%.2f", v)
}
