package plan_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const (
	repo        = "../../examples/quickstart"
	metricsFile = repo + "/metrics.om"
)

var at = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// counting records the queries a plan makes of a real recorded source.
type counting struct {
	src     plan.UsageSource
	queries []usage.Query
	err     error
}

func (c *counting) Usage(ctx context.Context, q usage.Query) (usage.Result, error) {
	c.queries = append(c.queries, q)
	if c.err != nil {
		return usage.Result{}, c.err
	}
	return c.src.Usage(ctx, q)
}

var _ plan.UsageSource = (*openmetrics.Recorded)(nil)

func recorded(t testing.TB) *openmetrics.Recorded {
	t.Helper()
	src, err := openmetrics.OpenRecorded(metricsFile)
	require.NoError(t, err)
	return src
}

// TestMakeBatchesUsageQueries: workloads governed alike share one query,
// never one per workload or pod (docs/design.md §2).
func TestMakeBatchesUsageQueries(t *testing.T) {
	src := &counting{src: recorded(t)}
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: src})
	require.NoError(t, err)
	require.Len(t, src.queries, 1)
	q := src.queries[0]
	require.Equal(t, at, q.At)
	require.Equal(t, 7*24*time.Hour+15*time.Minute, q.Lookback)
	var names []string
	for _, r := range q.Workloads {
		names = append(names, r.Name)
	}
	require.ElementsMatch(t, []string{"asr-whisper", "chat", "embed", "rerank", "summarize", "translate"}, names)
	require.Equal(t, "kubex_gpu_container_sm_utilization_percent", q.Metrics[usage.Compute].Metric)
	require.Equal(t, "kubex_gpu_container_memory_footprint_percent", q.Metrics[usage.Memory].Metric)
	require.Len(t, p.Decisions, 7)
	require.Equal(t, 1, p.Hidden)
}

// TestMakeUsageErrorNeverShrinks is docs/design.md §10 invariant 1 for a failing
// source: every workload it was asked about keeps its allocation, and the
// error is reported.
func TestMakeUsageErrorNeverShrinks(t *testing.T) {
	src := &counting{err: errors.New("prometheus: 503 Service Unavailable")}
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: src})
	require.NoError(t, err)
	require.Empty(t, p.Files)
	require.Equal(t, []plan.Problem{{Message: "usage query for 6 workload(s) failed: prometheus: 503 Service Unavailable"}}, p.Problems)
	for _, d := range p.Decisions {
		if d.Workload.Ref.Name == "ocr" {
			continue
		}
		require.Equal(t, engine.NoChange, d.Action, d.Workload.Ref.Name)
		require.Equal(t, d.Current, d.Recommended)
		require.Equal(t, engine.CauseQueryFailed, d.Cause, "a failed query is no judgement: an open pull request stays")
		require.False(t, d.Cause.Conclusive())
		require.Equal(t, "no change: usage unavailable: prometheus: 503 Service Unavailable", d.Reason())
	}
	// The table says the error once, under the problems, not on every row.
	var table strings.Builder
	require.NoError(t, p.WriteTable(&table, 0))
	require.Equal(t, 1, strings.Count(table.String(), "503 Service Unavailable"), table.String())
	require.Contains(t, table.String(), "no change: usage unavailable (the failed query is under the problems below)")
}

// TestMakeNoFuture: a plan at an earlier time sees only what was recorded
// by then: before chat's spike, chat has no reason to grow (and the hot
// chat-canary next to it must not lend it one).
func TestMakeNoFuture(t *testing.T) {
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at.Add(-10 * time.Minute), Source: recorded(t)})
	require.NoError(t, err)
	for _, d := range p.Decisions {
		if d.Workload.Ref.Name == "chat" {
			require.Equal(t, engine.NoChange, d.Action, d.Reason())
			return
		}
	}
	t.Fatal("no decision for chat")
}

func TestMakeEditsOnlyWhatDecisionsChange(t *testing.T) {
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t)})
	require.NoError(t, err)
	require.Empty(t, p.Problems)
	var files []string
	for _, f := range p.Files {
		files = append(files, f.Path)
	}
	require.Equal(t, []string{"apps/asr/deployment.yaml", "apps/chat/deployment.yaml", "apps/summarize/deployment.yaml", "apps/translate/deployment.yaml"}, files)
	for _, f := range p.Files {
		for _, c := range f.Changes {
			require.NotEmpty(t, c.Reason, "every change carries its reason")
		}
	}
	// chat: 0.72, and vLLM keeps 10% of it free without HAMi-core.
	chat := string(p.Files[1].New)
	require.Contains(t, chat, `gpu-fraction: "0.72"`)
	require.Contains(t, chat, "- --gpu-memory-utilization\n            - \"0.64\"\n")
	// asr-whisper moves onto KAI: scheduler, queue, fraction, and no
	// nvidia.com/gpu left beside the fraction.
	asr := string(p.Files[0].New)
	require.Contains(t, asr, "schedulerName: kai-scheduler")
	require.Contains(t, asr, "kai.scheduler/queue: kubex-unlimited-gpu-queue")
	require.Contains(t, asr, `gpu-fraction: "0.24"`)
	require.NotContains(t, asr, "nvidia.com/gpu:")
	require.True(t, strings.HasPrefix(p.Files[0].Diff(), "--- a/apps/asr/deployment.yaml\n"))
}

// quickstartCopy copies the quickstart repository so that a test may
// change it, applying each edit (file → old → new) once.
func quickstartCopy(t *testing.T, edits map[string][2]string) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS(repo)))
	for file, e := range edits {
		path := filepath.Join(dir, file)
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(b), e[0])
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), e[0], e[1], 1)), 0o644))
	}
	return dir
}

func decisionOf(t *testing.T, p *plan.Plan, name string) plan.Decision {
	t.Helper()
	for _, d := range p.Decisions {
		if d.Workload.Ref.Name == name {
			return d
		}
	}
	t.Fatalf("no decision for %s", name)
	return plan.Decision{}
}

// TestMakeLeavesDoubtfulManifestsAlone: a request the tool cannot read
// correctly, or a workload defined twice, is reported and left alone.
func TestMakeLeavesDoubtfulManifestsAlone(t *testing.T) {
	dir := quickstartCopy(t, map[string][2]string{
		"apps/chat/deployment.yaml":      {`gpu-fraction: "0.5"`, `gpu-fraction: "0.5"` + "\n        gpu-fraction-num-devices: \"2\""},
		"apps/translate/deployment.yaml": {`gpu-fraction: '0.25'`, `gpu-fraction: '1.5'`},
	})
	b, err := os.ReadFile(filepath.Join(dir, "apps/summarize/deployment.yaml"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "legacy"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "legacy/summarize.yaml"), b, 0o644))

	p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: at, Source: recorded(t)})
	require.NoError(t, err)
	chat := decisionOf(t, p, "chat")
	require.Equal(t, engine.Skipped, chat.Action)
	require.Equal(t, engine.CauseManifestInvalid, chat.Cause)
	require.Equal(t, "left alone: gpu-fraction-num-devices 2: fractions over several devices are not supported yet", chat.Reason())
	translate := decisionOf(t, p, "translate")
	require.Equal(t, engine.Skipped, translate.Action)
	require.Equal(t, `left alone: line 30: invalid gpu-fraction "1.5": KAI wants a fraction strictly between 0 and 1`, translate.Reason())
	for _, d := range p.Decisions {
		if d.Workload.Ref.Name == "summarize" {
			require.Equal(t, engine.Skipped, d.Action)
			require.Equal(t, engine.CauseDuplicated, d.Cause)
			require.Equal(t, "left alone: defined 2 times, so which one is deployed is not known", d.Reason())
		}
	}
	var edited []string
	for _, f := range p.Files {
		edited = append(edited, f.Path)
	}
	require.Equal(t, []string{"apps/asr/deployment.yaml"}, edited)
	require.Len(t, p.Problems, 3)
	require.Contains(t, p.Problems, plan.Problem{File: "apps/summarize/deployment.yaml", Line: 1,
		Message: "inference/Deployment/summarize is defined 2 times (apps/summarize/deployment.yaml:1, legacy/summarize.yaml:1): which one is deployed is not known"})
	require.Equal(t, plan.Problem{File: "apps/chat/deployment.yaml", Line: 1,
		Message: "gpu-fraction-num-devices 2: fractions over several devices are not supported yet"}, p.Problems[0])
}

// TestMakeRefusedEditChangesNothing: when the editor refuses, the decision
// becomes "no change", says what it wanted, and the problem names the file.
func TestMakeRefusedEditChangesNothing(t *testing.T) {
	// An alias on the annotation's path: editing it would change the
	// anchor's other users too.
	dir := quickstartCopy(t, map[string][2]string{
		"apps/chat/deployment.yaml": {"      annotations:\n        gpu-fraction: \"0.5\"", "      annotations: &ann\n        gpu-fraction: \"0.5\""},
	})
	p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: at, Source: recorded(t)})
	require.NoError(t, err)
	chat := decisionOf(t, p, "chat")
	require.Equal(t, engine.NoChange, chat.Action)
	require.Equal(t, chat.Current, chat.Recommended)
	require.False(t, chat.Urgent)
	require.Equal(t, engine.CauseEditRefused, chat.Cause)
	require.Equal(t, engine.Fraction, chat.Evidence.Wanted.Recommended.Form, "the evidence keeps what the edit wanted")
	require.InDelta(t, 0.72, chat.Evidence.Wanted.Recommended.GPUs, 1e-6)
	require.Contains(t, chat.Reason(), "no change: the edit was refused (apps/chat/deployment.yaml:")
	require.Contains(t, chat.Reason(), "it wanted 0.50 → 0.72: compute peaked at 120%")
	require.Len(t, p.Problems, 1)
	require.Equal(t, "apps/chat/deployment.yaml", p.Problems[0].File)
	for _, f := range p.Files {
		require.NotEqual(t, "apps/chat/deployment.yaml", f.Path)
	}
}

// TestMakeSetsTheQueueWhereKAIReadsIt: with setQueueWhenSpecified, the
// queue changes wherever a label sets it; KAI reads the Deployment's own
// label before the template's.
func TestMakeSetsTheQueueWhereKAIReadsIt(t *testing.T) {
	dir := quickstartCopy(t, map[string][2]string{
		"policies/kai-gpu-sharing.yaml":  {"  kai:\n    vllm:", "  kai:\n    setQueueWhenSpecified: true\n    queue: gpu-shared\n    vllm:"},
		"apps/summarize/deployment.yaml": {"  labels:\n    app.kubernetes.io/name: summarize\n", "  labels:\n    app.kubernetes.io/name: summarize\n    kai.scheduler/queue: team-docs\n"},
	})
	// The queue setting is the project's: move the file to its group.
	pf := filepath.Join(dir, "policies/kai-gpu-sharing.yaml")
	b, err := os.ReadFile(pf)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(pf, []byte(strings.ReplaceAll(string(b), "rightsizing.kubex.ai/", "gpu-rightsizing.github.io/")), 0o644))

	p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: at, Source: recorded(t)})
	require.NoError(t, err)
	require.Empty(t, p.Problems)
	files := map[string]string{}
	for _, f := range p.Files {
		files[f.Path] = string(f.New)
	}
	// chat: the template's label.
	require.Contains(t, files["apps/chat/deployment.yaml"], "        kai.scheduler/queue: gpu-shared\n")
	require.NotContains(t, files["apps/chat/deployment.yaml"], "team-assistants")
	// summarize: both labels, the Deployment's and the template's.
	require.Equal(t, 2, strings.Count(files["apps/summarize/deployment.yaml"], "kai.scheduler/queue: gpu-shared"))
	require.NotContains(t, files["apps/summarize/deployment.yaml"], "team-docs")
}

// TestMakeSaysWhatTheEditLeftAlone: a vLLM container whose KV cache is
// sized in bytes ignores --gpu-memory-utilization; the fraction changes,
// the flag does not, and the decision says so.
func TestMakeSaysWhatTheEditLeftAlone(t *testing.T) {
	dir := quickstartCopy(t, map[string][2]string{
		"apps/chat/deployment.yaml": {"            - --gpu-memory-utilization\n            - \"0.45\"\n",
			"            - --gpu-memory-utilization\n            - \"0.45\"\n            - --kv-cache-memory-bytes=4000000000\n"},
	})
	p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: at, Source: recorded(t)})
	require.NoError(t, err)
	chat := decisionOf(t, p, "chat")
	require.Equal(t, engine.Upsize, chat.Action)
	require.Len(t, chat.Evidence.Notes, 1)
	require.Contains(t, chat.Evidence.Notes[0].Why, "--kv-cache-memory-bytes is set")
	require.Contains(t, chat.Reason(), "; left alone: ")
	require.Contains(t, chat.Reason(), "--kv-cache-memory-bytes is set, so vLLM ignores --gpu-memory-utilization")
	for _, f := range p.Files {
		if f.Path == "apps/chat/deployment.yaml" {
			require.Contains(t, string(f.New), `gpu-fraction: "0.72"`)
			require.Contains(t, string(f.New), "- \"0.45\"")
			return
		}
	}
	t.Fatal("chat not edited")
}
