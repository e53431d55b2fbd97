package backtest_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// qualityDoc is the page of the backtest's tables, from the root.
const qualityDoc = "docs/benchmarks/quality.md"

// TestBenchmarksMatchResults: every table of docs/benchmarks/quality.md
// (the detail behind BENCHMARKS.md's summary) between
// "<!-- backtest-results NAME -->" and "<!-- /backtest-results -->" is the
// one rendered from docs/backtest/NAME/results.json, and every scenario
// there has one; every block between "<!-- backtest-verdicts NAME -->"
// and "<!-- /backtest-verdicts -->" is docs/backtest/NAME/verdicts.md,
// and every "backtest-frontier" block its frontier.md.
// `make backtest` writes them all.
func TestBenchmarksMatchResults(t *testing.T) {
	root := filepath.Join("..", "..")
	md, err := os.ReadFile(filepath.Join(root, qualityDoc))
	require.NoError(t, err)
	blocks := regexp.MustCompile(`(?ms)^<!-- backtest-results (\S+) -->\n(.*?)^<!-- /backtest-results -->$`).FindAllSubmatch(md, -1)
	scenarios, err := filepath.Glob(filepath.Join(root, "docs", "backtest", "*", "results.json"))
	require.NoError(t, err)
	require.NotEmpty(t, scenarios)
	require.Equal(t, len(scenarios), len(blocks), "one table block per scenario of docs/backtest")
	for _, b := range blocks {
		name := string(b[1])
		t.Run(name, func(t *testing.T) {
			f, err := os.Open(filepath.Join(root, "docs", "backtest", name, "results.json"))
			require.NoError(t, err)
			defer f.Close()
			doc, err := backtest.ReadResults(f)
			require.NoError(t, err)
			var want bytes.Buffer
			require.NoError(t, doc.WriteMarkdown(&want))
			require.Equal(t, want.String(), string(b[2]), qualityDoc+" is out of date: run `make backtest`")
		})
	}
	// The verdicts of the split and the frontier, where the page
	// shows them, are the scenario's verdicts.md and frontier.md as
	// written.
	for _, kind := range []string{"verdicts", "frontier"} {
		blocks := regexp.MustCompile(`(?ms)^<!-- backtest-`+kind+` (\S+) -->\n(.*?)^<!-- /backtest-`+kind+` -->$`).FindAllSubmatch(md, -1)
		for _, b := range blocks {
			name := string(b[1])
			t.Run(name+"/"+kind, func(t *testing.T) {
				want, err := os.ReadFile(filepath.Join(root, "docs", "backtest", name, kind+".md"))
				require.NoError(t, err)
				require.Equal(t, string(want), string(b[2]), qualityDoc+" is out of date: run `make backtest`")
			})
		}
	}
}

// TestResultsFollowProtocol: every scenario's results.json names the
// protocol, and each policy file it judged was frozen by a commit that is
// an ancestor of the commit that last wrote the results
// (docs/backtest/protocol.md). Git history is the protocol's record, so
// the test needs the work tree's.
func TestResultsFollowProtocol(t *testing.T) {
	testenv.LookPath(t, "git")
	root := filepath.Join("..", "..")
	if err := exec.Command("git", "-C", root, "rev-parse", "--is-inside-work-tree").Run(); err != nil {
		t.Skipf("not in a git work tree (%v): the protocol's record is its history", err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "backtest", "*", "results.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			r, err := os.Open(f)
			require.NoError(t, err)
			defer r.Close()
			doc, err := backtest.ReadResults(r)
			require.NoError(t, err)
			require.NoError(t, backtest.CheckResultsFollow(context.Background(), backtest.Git{Dir: root}, root, f, doc.Protocol))
		})
	}
}
