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
// then the names of its CPU ratio, its second ratio and its CPU exponent
// ("" for none).
var speedRows = map[string][4]string{
	"`plan`, ten a file, one in ten edited":         {"cmd/recommender", "plan-per10-tenth-cpu-ratio", "plan-per10-tenth-floor-ratio", "plan-per10-tenth-exponent"},
	"`plan`, ten a file, all edited":                {"cmd/recommender", "plan-per10-all-cpu-ratio", "plan-per10-all-floor-ratio", "plan-per10-all-exponent"},
	"`plan`, one a file, one in ten edited":         {"cmd/recommender", "plan-per1-tenth-cpu-ratio", "plan-per1-tenth-floor-ratio", "plan-per1-tenth-exponent"},
	"`plan`, one a file, all edited":                {"cmd/recommender", "plan-per1-all-cpu-ratio", "plan-per1-all-floor-ratio", "plan-per1-all-exponent"},
	"`plan --write`, one a file, one in ten edited": {"cmd/recommender", "write-per1-tenth-cpu-ratio", "write-per1-tenth-floor-ratio", "write-per1-tenth-exponent"},
	"`plan --write`, one a file, all edited":        {"cmd/recommender", "write-per1-all-cpu-ratio", "write-per1-all-floor-ratio", "write-per1-all-exponent"},
	"`plan --write`, ten a file, one in ten edited": {"cmd/recommender", "write-per10-tenth-cpu-ratio", "write-per10-tenth-floor-ratio", "write-per10-tenth-exponent"},
	"`plan --write`, ten a file, all edited":        {"cmd/recommender", "write-per10-all-cpu-ratio", "write-per10-all-floor-ratio", "write-per10-all-exponent"},
	"opening a recording, in the package":           {"internal/metrics/openmetrics", "cpu-ratio", "rss-ratio", "cpu-exponent"},
	"`plan` of the recording, through the CLI":      {"internal/metrics/openmetrics", "cli-cpu-ratio", "cli-rss-ratio", ""},
	"Prometheus, 2,000 pods × a day":                {"internal/metrics/prometheus", "cpu-ratio", "rss-ratio", ""},
	"Prometheus, 10,000 pods × two hours":           {"internal/metrics/prometheus", "cpu-ratio-10k", "", "cpu-exponent"},
	"300 overlays, alike but for the namespace":     {"internal/patcher/kustomize", "cpu-ratio", "floor-ratio", "cpu-exponent"},
	"300 overlays, each with a label":               {"internal/patcher/kustomize", "label-cpu-ratio", "label-floor-ratio", "label-cpu-exponent"},
	"300 overlays, each with a patch":               {"internal/patcher/kustomize", "patch-cpu-ratio", "patch-floor-ratio", "patch-cpu-exponent"},
	"10,000 overlays, alike but for the namespace":  {"internal/patcher/kustomize", "cpu-ratio-10k", "", ""},
	"`run --scm local`, 10,000 changes":             {"cmd/recommender", "run-local-fast-import-ratio", "run-local-publish-ratio", "run-local-exponent"},
}

// TestBenchmarksSpeedSummary: each row of BENCHMARKS.md's speed summary
// (between "<!-- summary-speed -->" and "<!-- /summary-speed -->") states
// the ratios and the exponent its package's testdata/bench-e2e.json
// commits, the figures `make bench-e2e` checks a run against; and its
// last column says whether the figure its target names (the CPU ratio,
// or the RSS ratio) meets it.
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
	target := regexp.MustCompile(`^(CPU|RSS) ≤ ([0-9.]+)×$`)
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(m[1])), "\n")[2:] {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 8 {
			t.Errorf("BENCHMARKS.md speed summary: %q: want 8 cells, got %d", line, len(cells))
			continue
		}
		row, ok := speedRows[cells[0]]
		if !ok {
			t.Errorf("BENCHMARKS.md speed summary: %q: no such stage in speedRows", cells[0])
			continue
		}
		seen[cells[0]] = true
		figures := readFigures(t, filepath.Join(root, row[0], "testdata", "bench-e2e.json"))
		want := map[int]string{3: ratio(t, figures, row[1]), 4: "", 5: ""}
		if row[2] != "" {
			want[4] = ratio(t, figures, row[2])
		}
		if row[3] != "" {
			want[5] = exponent(t, figures, row[3])
		}
		for i, w := range want {
			if got := cells[i]; got != w {
				t.Errorf("BENCHMARKS.md speed summary, %s, column %d: %q, but %s/testdata/bench-e2e.json commits %q", cells[0], i+1, got, row[0], w)
			}
		}
		if cells[2] == "—" {
			if cells[7] != "—" {
				t.Errorf("BENCHMARKS.md speed summary, %s: no target, so met must be \"—\", not %q", cells[0], cells[7])
			}
			continue
		}
		tm := target.FindStringSubmatch(cells[2])
		if tm == nil {
			t.Errorf("BENCHMARKS.md speed summary, %s: target %q, want \"—\" or the form \"CPU ≤ 2.5×\" (or RSS)", cells[0], cells[2])
			continue
		}
		key := row[1]
		if tm[1] == "RSS" {
			key = row[2]
		}
		met := "no"
		if figures[key] <= mustFloat(t, tm[2]) {
			met = "yes"
		}
		if cells[7] != met {
			t.Errorf("BENCHMARKS.md speed summary, %s: met %q, but %.2f against %s says %q", cells[0], cells[7], figures[key], cells[2], met)
		}
	}
	for name := range speedRows {
		if !seen[name] {
			t.Errorf("BENCHMARKS.md speed summary has no row %q", name)
		}
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	var v float64
	if _, err := fmt.Sscan(s, &v); err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return v
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
