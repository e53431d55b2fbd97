package kustomize_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// The overlays row of issue 23's table: `recommender plan --write` on a
// repository of e2eBases bases and e2eOverlays overlays, each overlay
// including one base in a namespace of its own, and a recording in which
// every overlay's Deployment asks for the same upsize. The limit is what
// kustomize itself must do to show the result: a krusty build of every
// overlay, from the files on disk.
const (
	e2eBases    = 5
	e2eOverlays = 300
)

// The krusty child of BenchmarkE2EOverlays builds the repository this
// names.
const e2eRepoEnv = "RECOMMENDER_BENCH_E2E_REPO"

// e2eAt is the evaluation time of the recording: its newest sample.
var e2eAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// e2eDeployment is the Deployment of base i: the quickstart's chat, with
// the label its policies select on.
func e2eDeployment(i int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm-%[1]d
  labels:
    app.kubernetes.io/name: llm-%[1]d
    nvidia.com/gpu.present: "true"
spec:
  replicas: 1
  selector:
    matchLabels:
      app.kubernetes.io/name: llm-%[1]d
  template:
    metadata:
      labels:
        app.kubernetes.io/name: llm-%[1]d
        kai.scheduler/queue: team-assistants
      annotations:
        gpu-fraction: "0.5"
    spec:
      schedulerName: kai-scheduler
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.11.0
          args:
            - --model
            - Qwen/Qwen2.5-7B-Instruct-AWQ
            - --gpu-memory-utilization
            - "0.45"
          resources:
            requests:
              cpu: "4"
              memory: 16Gi
            limits:
              memory: 16Gi
`, i)
}

// e2eOverlay names overlay j and the base it includes.
func e2eOverlay(j int) (dir, namespace string, base int) {
	return fmt.Sprintf("overlays/o%03d", j), fmt.Sprintf("team-%03d", j), j % e2eBases
}

// writeE2ERepo writes the repository under root: the quickstart's
// policies, the bases and the overlays.
func writeE2ERepo(tb testing.TB, root string) {
	tb.Helper()
	policies, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "quickstart", "policies", "kai-gpu-sharing.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	files := map[string]string{"policies/kai-gpu-sharing.yaml": string(policies)}
	for i := range e2eBases {
		files[fmt.Sprintf("bases/b%d/kustomization.yaml", i)] = "resources:\n  - deployment.yaml\n"
		files[fmt.Sprintf("bases/b%d/deployment.yaml", i)] = e2eDeployment(i)
	}
	for j := range e2eOverlays {
		dir, ns, base := e2eOverlay(j)
		files[dir+"/kustomization.yaml"] = fmt.Sprintf("namespace: %s\nresources:\n  - ../../bases/b%d\n", ns, base)
	}
	for p, text := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(text), 0o644); err != nil {
			tb.Fatal(err)
		}
	}
}

// writeE2ERecording writes, for each overlay's Deployment, one pod that
// used 25 % of a GPU for half an hour and 60 % in the last two minutes:
// each asks for the same upsize of its base's 0.5, as the quickstart's
// chat does.
func writeE2ERecording(tb testing.TB, path string) {
	tb.Helper()
	const history = 30 // minutes, one sample a minute
	var b bytes.Buffer
	pod := func(j int) (ns, rs, name string) {
		_, ns, base := e2eOverlay(j)
		rs = fmt.Sprintf("llm-%d-7c9d8b5f6d", base)
		return ns, rs, rs + "-x2k4q"
	}
	family := func(name string, value func(j, ago int) string, labels func(j int) string) {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
		for j := range e2eOverlays {
			for ago := history; ago >= 0; ago-- {
				fmt.Fprintf(&b, "%s{%s} %s %d\n", name, labels(j), value(j, ago), e2eAt.Add(-time.Duration(ago)*time.Minute).Unix())
			}
		}
	}
	container := func(j int) string {
		ns, _, p := pod(j)
		return fmt.Sprintf(`namespace="%s",pod="%s",container="vllm"`, ns, p)
	}
	family("kubex_gpu_container_sm_utilization_percent", func(_, ago int) string {
		if ago < 2 {
			return "60"
		}
		return "25"
	}, container)
	family("kubex_gpu_container_memory_footprint_percent", func(int, int) string { return "60" }, container)
	family("kube_pod_owner", func(int, int) string { return "1" }, func(j int) string {
		ns, rs, p := pod(j)
		return fmt.Sprintf(`namespace="%s",pod="%s",owner_kind="ReplicaSet",owner_name="%s",owner_is_controller="true"`, ns, p, rs)
	})
	family("kube_replicaset_owner", func(int, int) string { return "1" }, func(j int) string {
		ns, rs, _ := pod(j)
		return fmt.Sprintf(`namespace="%s",replicaset="%s",owner_kind="Deployment",owner_name="%s",owner_is_controller="true"`, ns, rs, strings.TrimSuffix(rs, "-7c9d8b5f6d"))
	})
	started := strconv.FormatInt(e2eAt.Add(-50*time.Hour).Unix(), 10)
	family("kube_pod_start_time", func(int, int) string { return started }, func(j int) string {
		ns, _, p := pod(j)
		return fmt.Sprintf(`namespace="%s",pod="%s"`, ns, p)
	})
	b.WriteString("# EOF\n")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
}

// TestE2EOverlaysChild is a child process of BenchmarkE2EOverlays, and
// nothing in a test run: "krusty" builds every overlay from the disk, as
// `kustomize build` does, and renders its output.
func TestE2EOverlaysChild(t *testing.T) {
	repo := os.Getenv(e2eRepoEnv)
	switch testenv.E2EChild() {
	case "":
		t.Skip("a child of BenchmarkE2EOverlays")
	case "krusty":
		fs := filesys.MakeFsOnDisk()
		k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
		n := 0
		for j := range e2eOverlays {
			dir, _, _ := e2eOverlay(j)
			rm, err := k.Run(fs, filepath.Join(repo, filepath.FromSlash(dir)))
			if err != nil {
				t.Fatal(err)
			}
			out, err := rm.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			n += len(out)
		}
		fmt.Println(n)
	}
}

// BenchmarkE2EOverlays is the overlays row of issue 23's table: `plan
// --write` of 300 overlays over 5 bases, every overlay asking for the
// same edit of its base, run as users run the binary, against 300 krusty
// builds of the overlays in a child test binary, each side in a process
// of its own, one round an iteration (-benchtime 3x:
// three), each round on a fresh copy of the repository. It reports the
// median of the rounds' CPU ratios and of their peak RSS ratios, and
// fails when either is more than a third above testdata/bench-e2e.json.
// `make bench-e2e` runs it.
func BenchmarkE2EOverlays(b *testing.B) {
	testenv.SkipUnlessE2E(b)
	tmp := b.TempDir()
	bin := testenv.BuildRecommender(b)
	template := filepath.Join(tmp, "template")
	writeE2ERepo(b, template)
	metrics := filepath.Join(tmp, "usage.om")
	writeE2ERecording(b, metrics)
	var ratios, rssRatios []float64
	var plan, limit []time.Duration
	var rss, limitRSS []int64
	written := 0
	round := 0
	for b.Loop() {
		round++
		repo := filepath.Join(tmp, fmt.Sprintf("round-%d", round))
		if err := os.CopyFS(repo, os.DirFS(template)); err != nil {
			b.Fatal(err)
		}
		l := testenv.Measure(b, testenv.Child("krusty", "TestE2EOverlaysChild", e2eRepoEnv+"="+repo))
		p := testenv.Measure(b, exec.Command(bin, "plan", "--repo", repo, "--metrics-file", metrics, "--write"))
		written = changedBases(b, template, repo)
		plan, limit = append(plan, p.CPU), append(limit, l.CPU)
		ratios = append(ratios, float64(p.CPU)/float64(l.CPU))
		rss, limitRSS = append(rss, p.MaxRSS), append(limitRSS, l.MaxRSS)
		rssRatios = append(rssRatios, float64(p.MaxRSS)/float64(l.MaxRSS))
		if err := os.RemoveAll(repo); err != nil {
			b.Fatal(err)
		}
	}
	if written != e2eBases {
		b.Fatalf("plan --write changed %d of the %d bases' Deployments, want every one", written, e2eBases)
	}
	cpuRatio, rssRatio := testenv.Median(ratios), testenv.Median(rssRatios)
	b.ReportMetric(cpuRatio, "cpu-ratio")
	b.ReportMetric(rssRatio, "rss-ratio")
	b.ReportMetric(testenv.Median(plan).Seconds(), "plan-cpu-s")
	b.ReportMetric(testenv.Median(limit).Seconds(), "krusty-cpu-s")
	b.ReportMetric(float64(testenv.Median(rss))/(1<<20), "rss-MiB")
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), map[string]float64{"cpu-ratio": cpuRatio, "rss-ratio": rssRatio})
	testenv.WriteSection(b, filepath.Join("..", "..", "..", "BENCHMARKS.md"), "overlays", fmt.Sprintf(
		"| repository | plan --write CPU | krusty builds CPU | **CPU ratio** | peak RSS | krusty peak RSS | **RSS ratio** |\n"+
			"|---|---:|---:|---:|---:|---:|---:|\n"+
			"| %d overlays over %d bases, each base's Deployment upsized alike | %.2f s | %.2f s | **%.2f×** | %.0f MiB | %.0f MiB | **%.2f×** |\n",
		e2eOverlays, e2eBases, testenv.Median(plan).Seconds(), testenv.Median(limit).Seconds(), cpuRatio,
		float64(testenv.Median(rss))/(1<<20), float64(testenv.Median(limitRSS))/(1<<20), rssRatio))
}

// changedBases counts the bases whose Deployment plan --write changed in
// repo: the edit every overlay of a base asks for goes to the base.
func changedBases(tb testing.TB, template, repo string) int {
	tb.Helper()
	n := 0
	for i := range e2eBases {
		p := filepath.Join("bases", fmt.Sprintf("b%d", i), "deployment.yaml")
		was, err := os.ReadFile(filepath.Join(template, p))
		if err != nil {
			tb.Fatal(err)
		}
		now, err := os.ReadFile(filepath.Join(repo, p))
		if err != nil {
			tb.Fatal(err)
		}
		if !bytes.Equal(was, now) {
			n++
		}
	}
	return n
}
