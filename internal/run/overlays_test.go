package run_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// overlaysRepo is a Kustomize base with staging and prod overlays:
// chat and llm (a StatefulSet) are sized apart in each, embed alike in
// both, and ocr is prod's own.
const overlaysRepo = "testdata/overlays"

// overlayPod is one pod of the overlays fixture and where its compute
// peaks: from floor+0.3 to floor+0.9 % of a GPU, inside one 0.01 step
// of its recommendation (peak × 1.2, rounded up), whatever the wiggle.
type overlayPod struct {
	ns, kind, owner, pod, container string
	floor                           float64
}

// overlayRecording is the usage of the overlays fixture as the n-th run
// of a 15-minute schedule reads it: an hour and a half of samples a
// minute, ending 15 minutes later than the run before's. Each pod's
// compute and memory wiggle from run to run, by less than the 0.01 step
// of its recommendation, so each run decides the same allocations from
// other readings. Memory (8 to 12 % of the pod's 0.5) stays below what
// compute asks.
func overlayRecording(n int) []byte {
	const samples = 90
	// Each pod's recommendation is in its comment.
	pods := []overlayPod{
		{"staging", "Deployment", "chat", "chat-6d4b9c8f7-q7v2n", "vllm", 9},      // 0.12
		{"prod", "Deployment", "chat", "chat-6d4b9c8f7-x2k4q", "vllm", 29},        // 0.36
		{"staging", "Deployment", "embed", "embed-5d7c8f9b6-mq2zr", "server", 19}, // 0.24, as prod
		{"prod", "Deployment", "embed", "embed-5d7c8f9b6-k8s9q", "server", 19},
		{"staging", "StatefulSet", "llm", "llm-0", "vllm", 14},             // 0.18
		{"prod", "StatefulSet", "llm", "llm-0", "vllm", 34},                // 0.42
		{"prod", "Deployment", "ocr", "ocr-7b5d6c8f9-kq9xd", "server", 24}, // 0.30
	}
	r := new(metricstest.Recording)
	start := time.Duration(n) * 15 * time.Minute
	flat := func(v float64) []any {
		vs := make([]any, samples)
		for i := range vs {
			vs[i] = v
		}
		return vs
	}
	for i, p := range pods {
		wiggle := float64((n*7+i*3)%11) / 10 // 0 to 1, another each run
		peak := p.floor + 0.3 + 0.6*wiggle
		compute := flat(peak)
		for j := 0; j < samples; j += 10 {
			compute[j] = peak - 5
		}
		add := func(series string, vs []any) { r.Add(series, start, time.Minute, vs...) }
		uid := "u-" + p.pod // as PodOwner has it
		if p.kind == "Deployment" {
			rs := p.pod[:strings.LastIndex(p.pod, "-")]
			add(metricstest.PodOwner(p.ns, p.pod, "ReplicaSet", rs), flat(1))
			add(metricstest.ReplicaSetOwner(p.ns, rs, "Deployment", p.owner), flat(1))
		} else {
			add(metricstest.PodOwner(p.ns, p.pod, p.kind, p.owner), flat(1))
		}
		add(metricstest.Series("kube_pod_start_time", "namespace", p.ns, "pod", p.pod, "uid", uid), flat(float64(metricstest.T0.Add(-time.Hour).Unix())))
		add(metricstest.Series(metricstest.SM, "namespace", p.ns, "pod", p.pod, "container", p.container), compute)
		add(metricstest.Series(metricstest.KubexMemory, "namespace", p.ns, "pod", p.pod, "container", p.container), flat(8+4*wiggle))
	}
	return []byte(r.String())
}

// copyRepo copies the fixture dir into a new directory, without its
// recordings.
func copyRepo(t *testing.T, dir string) string {
	t.Helper()
	out := t.TempDir()
	for path, text := range testenv.DirFiles(t, dir, ".om") {
		p := filepath.Join(out, filepath.FromSlash(path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	}
	return out
}

// bareRepo is a bare repository whose main holds the fixture dir, as a
// forge's would: run --scm local clones it and pushes its branches there.
func bareRepo(t *testing.T, dir string) string {
	t.Helper()
	work := copyRepo(t, dir)
	gitRepo(t, work)
	bare := filepath.Join(t.TempDir(), "repo.git")
	gitIn(t, work, "clone", "-q", "--bare", work, bare)
	return bare
}

// writeRecording writes a recording into a new file and returns its path.
func writeRecording(t *testing.T, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(path, b, 0o644))
	return path
}

// TestPlanIsTheUnionOfTheBranches: what `plan --write` writes (the plan
// made as the plan command makes it, written into a copy) is, file by
// file and byte for byte, the union of what `run --scm local` pushes on
// its branches, each branch's diff taken against the base; and no two
// branches write one file. On the quickstart (plain manifests), on
// examples/clusters (a base both clusters agree on, each cluster's own
// overlay patches) and on staging and prod overlays of one base (a base
// both agree on, two first patches of one overlay, an overlay's own
// workload); and grouped by namespace or cluster as well.
func TestPlanIsTheUnionOfTheBranches(t *testing.T) {
	tests := []struct {
		name, repo string
		recording  func(t *testing.T) string
		groupBy    plan.Grouping
		branches   int
	}{
		{name: "quickstart", repo: quickstartRepo, recording: func(*testing.T) string { return quickstartMetrics }, branches: 4},
		{name: "clusters", repo: "../../examples/clusters", branches: 3, recording: func(t *testing.T) string {
			return writeRecording(t, "fleet.om", []byte(metricstest.Fleet().String()))
		}},
		{name: "overlays", repo: overlaysRepo, branches: 4, recording: func(t *testing.T) string {
			return writeRecording(t, "usage.om", overlayRecording(0))
		}},
		// The base both namespaces agree on joins their pull requests.
		{name: "overlays by namespace", repo: overlaysRepo, groupBy: plan.ByNamespace, branches: 1, recording: func(t *testing.T) string {
			return writeRecording(t, "usage.om", overlayRecording(0))
		}},
		{name: "clusters by cluster", repo: "../../examples/clusters", groupBy: plan.ByCluster, branches: 1, recording: func(t *testing.T) string {
			return writeRecording(t, "fleet.om", []byte(metricstest.Fleet().String()))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tt.recording(t)

			planned := copyRepo(t, tt.repo)
			o := options(planned)
			o.Usage = recording(rec)
			p, _, err := o.Usage.Plan(context.Background(), plan.Options{Repo: planned, DefaultNamespace: o.DefaultNamespace, Grouping: tt.groupBy},
				slog.New(slog.DiscardHandler), time.Now)
			require.NoError(t, err)
			require.Empty(t, p.Problems)
			errs, written := p.WriteFiles(planned)
			require.NoError(t, errors.Join(errs...))
			require.True(t, written)
			base := testenv.DirFiles(t, tt.repo, ".om")
			want := map[string]string{}
			for path, text := range testenv.DirFiles(t, planned) {
				if base[path] != text {
					want[path] = text
				}
			}

			bare := bareRepo(t, tt.repo)
			o = options(bare)
			o.Usage = recording(rec)
			o.Dashboard = false
			o.GroupBy = string(tt.groupBy)
			runOK(t, o, run.ChangesProposed)
			git := func(args ...string) string { return gitIn(t, bare, args...) }
			branches := strings.Fields(git("branch", "--list", "gpu-rightsizing/*", "--format=%(refname:short)"))
			got := map[string]string{}
			for _, b := range branches {
				for _, line := range strings.Split(strings.TrimSpace(git("diff", "--name-status", "--no-renames", "main", b)), "\n") {
					status, path, _ := strings.Cut(line, "\t")
					require.NotContains(t, got, path, "two branches write %s", path)
					require.Contains(t, "AM", status, line)
					got[path] = git("show", b+":"+path)
				}
			}
			require.Equal(t, want, got)
			require.Len(t, branches, tt.branches, "%v", branches)
		})
	}
}

// pushCount counts the branches a run pushes, as a terminal's progress
// sees them.
type pushCount struct {
	label  string
	pushes int
}

func (c *pushCount) Start(label string, _ int) { c.label = label }
func (c *pushCount) Step() {
	if strings.Contains(c.label, "pushed") {
		c.pushes++
	}
}
func (c *pushCount) Clear() {}

// TestRunOverlaysStayPut is 30 runs of a 15-minute schedule on staging
// and prod overlays of one base, each on a recording of its own whose
// readings wiggle below the recommendations' 0.01 step: the first run
// pushes every branch, and none of the 29 after it pushes anything or
// moves a ref, though the readings its pull requests quote moved. A
// measured value in a written file (a patch's header) would change the
// branch's bytes, so its fingerprint, and push.
func TestRunOverlaysStayPut(t *testing.T) {
	bare := bareRepo(t, overlaysRepo)
	git := func(args ...string) string { return gitIn(t, bare, args...) }
	var recommended, reasons []string
	for n := range 30 {
		o := options(bare)
		o.Usage = recording(writeRecording(t, fmt.Sprintf("usage-%02d.om", n), overlayRecording(n)))
		count := &pushCount{}
		o.Progress = count
		refs := git("for-each-ref")
		stdout, stderr, res, err := runOnce(t, o)
		require.NoError(t, err, "run %d\n%s\n%s", n, stdout, stderr)
		require.Empty(t, res.Plan.Problems, "run %d", n)
		var rec, why []string
		for _, d := range res.Plan.Decisions {
			rec = append(rec, d.Workload.Ref.String()+" "+d.Recommended.String())
			why = append(why, d.Reason())
		}
		if n == 0 {
			require.Equal(t, run.ChangesProposed, res.Outcome, stderr)
			require.Equal(t, 4, res.Report.Count(publish.Opened), stderr)
			require.Equal(t, 4, count.pushes)
			recommended, reasons = rec, why
			continue
		}
		require.Equal(t, recommended, rec, "run %d decided other allocations: the wiggle is too wide", n)
		require.Zero(t, count.pushes, "run %d pushed", n)
		require.Equal(t, refs, git("for-each-ref"), "run %d moved a ref", n)
		// A body may be brought to the new readings, in place; nothing is
		// opened, closed or failed.
		require.Equal(t, 4, res.Report.Count(publish.Unchanged)+res.Report.Count(publish.Updated), "run %d\n%s", n, stderr)
		if n == 29 {
			require.NotEqual(t, reasons, why, "the readings never moved: the test proves nothing")
		}
	}
}
