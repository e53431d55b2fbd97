package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// cli runs the command line args as Main does, and returns its output
// and exit code.
func cli(t *testing.T, args ...string) (stdout, stderr string, code exitCode) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// treeHash fingerprints every file under root, to prove a run wrote nothing.
func treeHash(t *testing.T, root string) map[string][32]byte {
	t.Helper()
	sums := map[string][32]byte{}
	require.NoError(t, filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		sums[path] = sha256.Sum256(b)
		return err
	}))
	return sums
}

// TestQuickstartPlan is `make demo`: the plan of the embedded default, as
// a golden file. It must show every case the quickstart exists to show.
func TestQuickstartPlan(t *testing.T) {
	before := treeHash(t, quickstartRepo)
	out, errOut, code := cli(t, "plan", "--repo", quickstartRepo, "--metrics-file", quickstartMetrics)
	require.Equal(t, exitOK, code, errOut)
	require.Empty(t, errOut)
	golden(t, "quickstart-plan.txt", []byte(out))
	require.Equal(t, before, treeHash(t, quickstartRepo), "plan must write nothing")

	for _, want := range []string{
		"upsize (urgent)  compute peaked at 120% of its 0.50 allocation over 2m (≥ 100%) → 0.60 × 1.2 = 0.72",
		"scaleBack        7d baseline",
		"no change: incomplete data in the window",
		"no change: pod too young to judge",
		"skipped          out of scope: no policy selects it",
		"--- a/apps/chat/deployment.yaml\n+++ b/apps/chat/deployment.yaml\n",
		`+        gpu-fraction: "0.72"`,
	} {
		require.Contains(t, out, want)
	}
}

func TestQuickstartPlanJSON(t *testing.T) {
	args := []string{"plan", "--repo", quickstartRepo, "--metrics-file", quickstartMetrics, "--at", "2026-11-30T12:00:00Z", "-o", "json"}
	first, errOut, code := cli(t, args...)
	require.Equal(t, exitOK, code, errOut)
	second, _, _ := cli(t, args...)
	require.Equal(t, first, second, "same inputs and --at must give byte-identical output")
	golden(t, "quickstart-plan.json", []byte(first))

	var got struct {
		At        string `json:"at"`
		Decisions []struct {
			Namespace, Kind, Name, File, Action, Reason string
			Current, Recommended                        *float64
		} `json:"decisions"`
		Edits []struct {
			File, Diff string
		} `json:"edits"`
		Errors []json.RawMessage `json:"errors"`
	}
	dec := json.NewDecoder(strings.NewReader(first))
	require.NoError(t, dec.Decode(&got))
	require.Equal(t, "2026-11-30T12:00:00Z", got.At)
	require.Empty(t, got.Errors)
	actions := map[string]string{}
	for _, d := range got.Decisions {
		require.Equal(t, "Deployment", d.Kind)
		require.NotEmpty(t, d.File)
		actions[d.Name] = d.Action
	}
	require.Equal(t, map[string]string{
		"asr-whisper": "scaleBack", "chat": "upsize", "embed": "none", "ocr": "skipped",
		"rerank": "none", "summarize": "scaleBack", "translate": "upsize",
	}, actions)
	require.Len(t, got.Edits, 4)
	for _, e := range got.Edits {
		require.True(t, strings.HasPrefix(e.Diff, "--- a/"+e.File+"\n+++ b/"+e.File+"\n"), e.Diff)
	}
}

// TestPlanRefusesBadPolicy: a policy with an error is reported with file,
// line and field, the run exits non-zero, and no workload it governs is
// edited, while the plan is still printed.
func TestPlanRefusesBadPolicy(t *testing.T) {
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	policyFile := filepath.Join(repo, "policies", "kai-gpu-sharing.yaml")
	b, err := os.ReadFile(policyFile)
	require.NoError(t, err)
	broken := strings.Replace(string(b), "metricsWindow: 2m", "metricsWindow: 2 minutes", 1)
	require.NoError(t, os.WriteFile(policyFile, []byte(broken), 0o644))

	out, errOut, code := cli(t, "plan", "--repo", repo, "--metrics-file", quickstartMetrics)
	require.Equal(t, exitProblems, code)
	require.Empty(t, errOut)
	require.Contains(t, out, "1 problem(s); whatever they touch is left alone:\n"+
		`  policies/kai-gpu-sharing.yaml:81:24: spec.metrics.compute.upsize.metricsWindow: invalid duration "2 minutes"`)
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "inference/Deployment/") && !strings.Contains(line, "/ocr ") {
			require.Regexp(t, `skipped +left alone: ClusterGpuReactivePolicy kai-gpu-sharing-reactive is invalid \(policies/kai-gpu-sharing.yaml:56\)`, line)
		}
	}
	require.NotContains(t, out, "--- a/", "no file may be edited")
}

func TestPlanBadInputs(t *testing.T) {
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{name: "missing repo", args: []string{"--repo", "does-not-exist", "--metrics-file", quickstartMetrics},
			err: "error: repository does-not-exist: not a readable directory\n"},
		{name: "missing metrics", args: []string{"--repo", quickstartRepo, "--metrics-file", "nope.om"},
			err: "error: read recorded usage: open nope.om: no such file or directory\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := cli(t, append([]string{"plan"}, tt.args...)...)
			require.Equal(t, exitError, code)
			require.Empty(t, out)
			require.Equal(t, tt.err, errOut)
		})
	}
	out, errOut, code := cli(t, "plan", "--repo", quickstartRepo)
	require.Equal(t, exitUsage, code)
	require.Empty(t, out)
	require.True(t, strings.HasPrefix(errOut, "`--metrics-file` or `--prometheus-url` is required"), errOut)
	require.True(t, strings.HasSuffix(errOut, "\n\nRun `recommender plan --help` for usage.\n"), "where to read the usage of the command that failed: %s", errOut)
	require.NotContains(t, errOut, "Usage:", "not the usage itself, which would bury the mistake")
}

// TestPlanRefusesAnUnreadableFraction: a gpu-fraction KAI would not read
// as written is a problem of the file, and the workload is left alone,
// never taken for one without a GPU request.
func TestPlanRefusesAnUnreadableFraction(t *testing.T) {
	tests := []struct {
		name, value, problem string
	}{
		{name: "empty", value: `""`,
			problem: `apps/translate/deployment.yaml:12: line 30: invalid gpu-fraction: it is empty`},
		{name: "a sequence", value: `['0.25']`,
			problem: `apps/translate/deployment.yaml:12: invalid value: line 30: gpu-fraction is a sequence, not a string`},
		{name: "a leading blank", value: `' 0.25'`,
			problem: `apps/translate/deployment.yaml:12: line 30: invalid gpu-fraction " 0.25": KAI reads a decimal number, or one in scientific notation, without blanks`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := t.TempDir()
			require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
			file := filepath.Join(repo, "apps", "translate", "deployment.yaml")
			b, err := os.ReadFile(file)
			require.NoError(t, err)
			broken := strings.Replace(string(b), "gpu-fraction: '0.25'", "gpu-fraction: "+tt.value, 1)
			require.NotEqual(t, string(b), broken)
			require.NoError(t, os.WriteFile(file, []byte(broken), 0o644))

			out, errOut, code := cli(t, "plan", "--repo", repo, "--metrics-file", quickstartMetrics)
			require.Equal(t, exitProblems, code, out)
			require.Empty(t, errOut)
			require.Contains(t, out, "\n  "+tt.problem+"\n")
			require.Regexp(t, `inference/Deployment/translate +.*skipped +left alone: `, out)
			require.NotContains(t, out, "--- a/apps/translate/")
		})
	}
}

// TestMainExitCodes: the README's exit codes, through Main. A command line
// that is wrong in any way is a usage mistake: 2, with the message and the
// command whose usage to read, and nothing on stdout.
func TestMainExitCodes(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		code      exitCode
		errPrefix string
		usage     string
	}{
		{name: "no command prints help", args: nil, code: exitOK},
		{name: "unknown command", args: []string{"bogus"}, code: exitUsage,
			errPrefix: "unknown command \"bogus\" for \"recommender\"\n", usage: "recommender"},
		{name: "misspelt command", args: []string{"pln"}, code: exitUsage,
			errPrefix: "unknown command \"pln\" for \"recommender\"\n\nDid you mean this?\n\tplan\n\trun\n", usage: "recommender"},
		{name: "extra argument to plan", args: []string{"plan", "--repo", quickstartRepo, "--metrics-file", quickstartMetrics, "extra"}, code: exitUsage,
			errPrefix: "unknown command \"extra\" for \"recommender plan\"\n", usage: "recommender plan"},
		{name: "extra argument to backtest", args: []string{"backtest", "extra"}, code: exitUsage,
			errPrefix: "unknown command \"extra\" for \"recommender backtest\"\n", usage: "recommender backtest"},
		{name: "unknown flag", args: []string{"--bogus"}, code: exitUsage,
			errPrefix: "unknown flag: --bogus\n", usage: "recommender"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := cli(t, tt.args...)
			require.Equal(t, tt.code, code, errOut)
			if tt.code == exitOK {
				require.Contains(t, out, "Available Commands:")
				return
			}
			require.Empty(t, out)
			require.True(t, strings.HasPrefix(errOut, tt.errPrefix), errOut)
			require.True(t, strings.HasSuffix(errOut, "\nRun `"+tt.usage+" --help` for usage.\n"), errOut)
			require.NotContains(t, errOut, "Usage:")
		})
	}
}

// TestPlanEvaluationTime: an evaluation time far from the recording is a
// usage mistake that names the recording's span, and a lone sample dated a
// year ahead neither moves the default evaluation time nor goes unsaid.
func TestPlanEvaluationTime(t *testing.T) {
	const span = "its samples run from 2026-11-29T10:00:00Z to 2026-11-30T12:00:00Z"
	tests := []struct {
		name string
		at   string
		code exitCode
		err  string
	}{
		{name: "a year after", at: "2027-11-30T12:00:00Z", code: exitUsage,
			err: "`--at` 2027-11-30T12:00:00Z is outside the recording: " + span + ", and an evaluation time must fall within them or up to a day after\n"},
		{name: "before the oldest sample", at: "2026-11-29T09:59:59Z", code: exitUsage,
			err: "`--at` 2026-11-29T09:59:59Z is outside the recording: " + span + ", and an evaluation time must fall within them or up to a day after\n"},
		{name: "zero", at: "0", code: exitUsage,
			err: "invalid `--at`: \"0\" is not a plausible time: Unix seconds from 946684800 (2000) to 32503680000 (3000)\n"},
		{name: "the newest sample", at: "2026-11-30T12:00:00Z", code: exitOK},
		{name: "a day after", at: "2026-12-01T12:00:00Z", code: exitOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := cli(t, "plan", "--repo", quickstartRepo, "--metrics-file", quickstartMetrics, "--at", tt.at)
			require.Equal(t, tt.code, code, errOut)
			if tt.code == exitOK {
				require.Empty(t, errOut)
				return
			}
			require.Empty(t, out)
			require.Equal(t, tt.err+"\nRun `recommender plan --help` for usage.\n", errOut)
		})
	}

	t.Run("a sample a year ahead", func(t *testing.T) {
		b, err := os.ReadFile(quickstartMetrics)
		require.NoError(t, err)
		body, ok := strings.CutSuffix(string(b), "# EOF\n")
		require.True(t, ok)
		lines := strings.Count(body, "\n")
		file := filepath.Join(t.TempDir(), "metrics.om")
		stray := `kube_pod_start_time{namespace="staging",pod="summarize-6b8f9c7d5-t4hxm"} 1795968000.00 1827576000` + "\n"
		require.NoError(t, os.WriteFile(file, []byte(body+stray+"# EOF\n"), 0o644))

		out, errOut, code := cli(t, "plan", "--repo", quickstartRepo, "--metrics-file", file)
		require.Equal(t, exitOK, code, errOut)
		want, err := os.ReadFile(filepath.Join("testdata", "quickstart-plan.txt"))
		require.NoError(t, err)
		require.Equal(t, string(want), out, "the plan of the recording without the stray sample")
		// stderr is no terminal here: the log is JSON.
		require.Contains(t, errOut, `"level":"WARN","msg":"ignoring samples far after the rest of the recording: a clock was wrong when they were taken","samples":1,"newest":"2027-11-30T12:00:00Z","line":`+strconv.Itoa(lines+1)+",")
	})
}
