package kustomize_test

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// The overlays row of the end-to-end table: `recommender plan --write` on a
// repository of bases and overlays, each overlay including one base in a
// namespace of its own, and a recording in which every overlay's
// Deployment asks for the same upsize. The limit is what kustomize itself
// must do to show the result: a krusty build of every overlay, from the
// files on disk. The floor is what a proof that builds every overlay
// again must at least do: every overlay built twice, once to discover it
// and once to prove the edit, neither rendered. The tool builds one
// overlay of each set alike but for its namespace (docs/design.md §10,
// invariant 2), and can come in under it.
// rounds, when set, caps the rounds of a shape below -benchtime.
// kind is what each overlay adds besides its namespace: "" nothing,
// "label" a label of its own, "patch" a patch of its own (e2eOverlayFiles).
type e2eShape struct {
	bases, overlays, rounds int
	kind                    string
}

// e2eShapes are the repositories measured: the end-to-end row, then the
// same shape (60 overlays a base, as near as a whole number of bases
// makes it) at 1,000 and 10,000 overlays for the CPU exponent. A round
// of 10,000 takes minutes of CPU on 2 cores (its three processes build
// 40,000 overlays between them): it is measured once, so that `make
// bench-e2e` runs this package in well under a quarter of an hour.
var e2eShapes = []e2eShape{{5, 300, 0, ""}, {17, 1000, 0, ""}, {167, 10000, 1, ""}}

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

// e2eOverlay names overlay j of a repository of bases bases and the base
// it includes.
func e2eOverlay(j, bases int) (dir, namespace string, base int) {
	return fmt.Sprintf("overlays/o%03d", j), fmt.Sprintf("team-%03d", j), j % bases
}

// e2eOverlayFiles are the files of overlay j of shape sh: its
// kustomization, in a namespace of its own, and what sh.kind adds.
// A label of its own goes on every object, selectors and pod templates
// too (as commonLabels does). A patch of its own (strategic merge) sets the
// replicas and a label of the pod template, values that differ from
// overlay to overlay. It leaves the containers alone: the editor takes a
// patch that sets a container's field (an environment variable) for one
// that may set its arguments, and refuses the edit.
func e2eOverlayFiles(j int, sh e2eShape) map[string]string {
	dir, ns, base := e2eOverlay(j, sh.bases)
	k := fmt.Sprintf("namespace: %s\nresources:\n  - ../../bases/b%d\n", ns, base)
	files := map[string]string{}
	switch sh.kind {
	case "label":
		k += fmt.Sprintf("labels:\n  - pairs:\n      team: %s\n    includeSelectors: true\n", ns)
	case "patch":
		k += "patches:\n  - path: team.yaml\n"
		files[dir+"/team.yaml"] = fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: llm-%d
spec:
  replicas: %d
  template:
    metadata:
      labels:
        team: %s
`, base, 2+j/sh.bases%3, ns)
	}
	files[dir+"/kustomization.yaml"] = k
	return files
}

// writeE2ERepo writes the repository of shape sh under root: the
// quickstart's policies, the bases and the overlays.
func writeE2ERepo(tb testing.TB, root string, sh e2eShape) {
	tb.Helper()
	policies, err := os.ReadFile(filepath.Join("..", "..", "..", "examples", "quickstart", "policies", "kai-gpu-sharing.yaml"))
	if err != nil {
		tb.Fatal(err)
	}
	files := map[string]string{"policies/kai-gpu-sharing.yaml": string(policies)}
	for i := range sh.bases {
		files[fmt.Sprintf("bases/b%d/kustomization.yaml", i)] = "resources:\n  - deployment.yaml\n"
		files[fmt.Sprintf("bases/b%d/deployment.yaml", i)] = e2eDeployment(i)
	}
	for j := range sh.overlays {
		maps.Copy(files, e2eOverlayFiles(j, sh))
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
func writeE2ERecording(tb testing.TB, path string, sh e2eShape) {
	tb.Helper()
	const history = 30 // minutes, one sample a minute
	var b bytes.Buffer
	pod := func(j int) (ns, rs, name string) {
		_, ns, base := e2eOverlay(j, sh.bases)
		rs = fmt.Sprintf("llm-%d-7c9d8b5f6d", base)
		return ns, rs, rs + "-x2k4q"
	}
	family := func(name string, value func(j, ago int) string, labels func(j int) string) {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", name)
		for j := range sh.overlays {
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
// `kustomize build` does, and renders its output; "floor" reads the
// kustomizations and what they include into memory, as discovery does,
// and builds every overlay twice without rendering it: once from a copy
// whose kustomizations ask for origin annotations, removed after, as
// discovery builds it, and once from the files as they are, as the proof
// builds it.
func TestE2EOverlaysChild(t *testing.T) {
	repo := os.Getenv(e2eRepoEnv)
	child := testenv.E2EChild()
	if child == "" {
		t.Skip("a child of BenchmarkE2EOverlays")
	}
	entries, err := os.ReadDir(filepath.Join(repo, "overlays"))
	if err != nil {
		t.Fatal(err)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	n := 0
	switch child {
	case "krusty":
		fs := filesys.MakeFsOnDisk()
		for _, e := range entries {
			rm, err := k.Run(fs, filepath.Join(repo, "overlays", e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			out, err := rm.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			n += len(out)
		}
	case "floor":
		plain, traced := filesys.MakeFsInMemory(), filesys.MakeFsInMemory()
		for _, top := range []string{"bases", "overlays"} {
			err := filepath.WalkDir(filepath.Join(repo, top), func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				rel, err := filepath.Rel(repo, p)
				if err != nil {
					return err
				}
				mem := "/repo/" + filepath.ToSlash(rel)
				if err := plain.WriteFile(mem, b); err != nil {
					return err
				}
				if filepath.Base(p) == "kustomization.yaml" {
					b = append([]byte("buildMetadata: [originAnnotations]\n"), b...)
				}
				return traced.WriteFile(mem, b)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		for _, e := range entries {
			dir := "/repo/overlays/" + e.Name()
			rm, err := k.Run(traced, dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := rm.RemoveOriginAnnotations(); err != nil {
				t.Fatal(err)
			}
			again, err := k.Run(plain, dir)
			if err != nil {
				t.Fatal(err)
			}
			n += rm.Size() + again.Size()
		}
	default:
		t.Fatalf("no child %q", child)
	}
	fmt.Println(n)
}

// BenchmarkE2EOverlays is the overlays row of the end-to-end table: `plan
// --write` of 300 overlays over 5 bases, every overlay asking for the
// same edit of its base, run as users run the binary, against 300 krusty
// builds of the overlays (the limit) and the design's floor, each in a
// child test binary, each side in a process of its own, one round an
// iteration (-benchtime 3x: three), each round on a fresh copy of the
// repository; then the same at 1,000 and 10,000 overlays, for the CPU
// exponent of each side. It reports the medians of the rounds' ratios,
// and fails when one lands outside its tolerance of
// testdata/bench-e2e.json (testenv.Departure).
// `make bench-e2e` runs it.
func BenchmarkE2EOverlays(b *testing.B) {
	testenv.SkipUnlessE2E(b)
	bin := testenv.BuildRecommender(b)
	rows := make([]e2eRow, len(e2eShapes))
	for i, sh := range e2eShapes {
		b.Run(strconv.Itoa(sh.overlays), func(b *testing.B) { rows[i] = benchOverlays(b, bin, sh) })
	}
	if slices.ContainsFunc(rows, func(r e2eRow) bool { return r.plan == 0 }) {
		return // a shape left out by -bench
	}
	small, large := rows[1], rows[2]
	exp := func(a, b time.Duration) float64 {
		return math.Log(b.Seconds()/a.Seconds()) / math.Log(float64(large.shape.overlays)/float64(small.shape.overlays))
	}
	first := rows[0]
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), map[string]float64{
		"cpu-ratio": first.cpuRatio, "rss-ratio": first.rssRatio, "floor-ratio": first.floorRatio,
		"cpu-ratio-10k": large.cpuRatio, "cpu-exponent": exp(small.plan, large.plan),
	})
	testenv.WriteSection(b, filepath.Join("..", "..", "..", "docs", "benchmarks", "speed.md"), "overlays", overlaysTable(rows, exp))
}

// e2eShapeKinds are the overlays of BenchmarkE2EOverlayShapes: each
// adds a label of its own, or a patch of its own, besides its namespace;
// at 300 and 1,000 overlays, for the CPU exponent.
var e2eShapeKinds = []e2eShape{
	{5, 300, 0, "label"}, {17, 1000, 0, "label"},
	{5, 300, 0, "patch"}, {17, 1000, 0, "patch"},
}

// BenchmarkE2EOverlayShapes is BenchmarkE2EOverlays for overlays that
// differ by more than name and namespace: each sets a label of its own
// (selectors and pod templates too), or applies a strategic-merge patch
// of its own (replicas, a pod label). Outputs that differ that way are
// not the same but for names, so the proof cannot reuse one overlay's
// expectation for the next. Same limit and floor; figures go to
// testdata/bench-e2e.json under the kind's name.
func BenchmarkE2EOverlayShapes(b *testing.B) {
	testenv.SkipUnlessE2E(b)
	bin := testenv.BuildRecommender(b)
	rows := make([]e2eRow, len(e2eShapeKinds))
	for i, sh := range e2eShapeKinds {
		b.Run(sh.kind+"-"+strconv.Itoa(sh.overlays), func(b *testing.B) { rows[i] = benchOverlays(b, bin, sh) })
	}
	if slices.ContainsFunc(rows, func(r e2eRow) bool { return r.plan == 0 }) {
		return // a shape left out by -bench
	}
	figures := map[string]float64{}
	var text strings.Builder
	for i := 0; i < len(rows); i += 2 {
		small, large := rows[i], rows[i+1]
		exp := func(a, b time.Duration) float64 {
			return math.Log(b.Seconds()/a.Seconds()) / math.Log(float64(large.shape.overlays)/float64(small.shape.overlays))
		}
		kind := small.shape.kind
		figures[kind+"-cpu-ratio"], figures[kind+"-floor-ratio"], figures[kind+"-rss-ratio"] = small.cpuRatio, small.floorRatio, small.rssRatio
		figures[kind+"-cpu-ratio-1k"], figures[kind+"-cpu-exponent"] = large.cpuRatio, exp(small.plan, large.plan)
		if i > 0 {
			text.WriteString("\n")
		}
		text.WriteString(overlaysTable(rows[i:i+2], exp))
	}
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), figures)
	testenv.WriteSection(b, filepath.Join("..", "..", "..", "docs", "benchmarks", "speed.md"), "overlay-shapes", text.String())
}

// overlaysTable is the table of rows, the last two giving the exponent.
func overlaysTable(rows []e2eRow, exp func(a, b time.Duration) float64) string {
	var t strings.Builder
	t.WriteString("| repository | plan --write CPU | krusty builds CPU | floor CPU | **CPU ratio** | **tool ÷ floor** | floor ÷ krusty | peak RSS | krusty peak RSS | **RSS ratio** |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		fmt.Fprintf(&t, "| %s overlays over %d bases, %s | %.2f s | %.2f s | %.2f s | **%.2f×** | **%.2f×** | %.2f× | %.0f MiB | %.0f MiB | **%.2f×** |\n",
			thousands(r.shape.overlays), r.shape.bases, shapeSays[r.shape.kind], r.plan.Seconds(), r.limit.Seconds(), r.floor.Seconds(), r.cpuRatio, r.floorRatio,
			float64(r.floor)/float64(r.limit), float64(r.rss)/(1<<20), float64(r.limitRSS)/(1<<20), r.rssRatio)
	}
	small, large := rows[len(rows)-2], rows[len(rows)-1]
	fmt.Fprintf(&t, "\nCPU exponent from %s to %s overlays (time ∝ size^k): plan --write **%.2f**, krusty builds %.2f, floor %.2f.\n",
		thousands(small.shape.overlays), thousands(large.shape.overlays), exp(small.plan, large.plan), exp(small.limit, large.limit), exp(small.floor, large.floor))
	return t.String()
}

// shapeSays is what a row says of its overlays, by kind.
var shapeSays = map[string]string{
	"":      "each base's Deployment upsized alike",
	"label": "each overlay with a label of its own",
	"patch": "each overlay with a patch of its own",
}

// e2eRow is what BenchmarkE2EOverlays measured of one shape: medians of
// the rounds.
type e2eRow struct {
	shape                          e2eShape
	plan, limit, floor             time.Duration
	rss, limitRSS                  int64
	cpuRatio, floorRatio, rssRatio float64
}

// benchOverlays measures one shape: per round, the limit, the floor and
// plan --write on a fresh copy of the repository.
func benchOverlays(b *testing.B, bin string, sh e2eShape) e2eRow {
	tmp := b.TempDir()
	template := filepath.Join(tmp, "template")
	writeE2ERepo(b, template, sh)
	metrics := filepath.Join(tmp, "usage.om")
	writeE2ERecording(b, metrics, sh)
	var ratios, floorRatios, rssRatios []float64
	var plan, limit, floor []time.Duration
	var rss, limitRSS []int64
	written := 0
	round := 0
	for b.Loop() {
		round++
		if sh.rounds > 0 && round > sh.rounds {
			continue // b.Loop runs to its end
		}
		repo := filepath.Join(tmp, fmt.Sprintf("round-%d", round))
		if err := os.CopyFS(repo, os.DirFS(template)); err != nil {
			b.Fatal(err)
		}
		l := testenv.Measure(b, testenv.Child("krusty", "TestE2EOverlaysChild", e2eRepoEnv+"="+repo))
		f := testenv.Measure(b, testenv.Child("floor", "TestE2EOverlaysChild", e2eRepoEnv+"="+repo))
		p := testenv.Measure(b, exec.Command(bin, "plan", "--repo", repo, "--metrics-file", metrics, "--write"))
		written = changedBases(b, template, repo, sh.bases)
		plan, limit, floor = append(plan, p.CPU), append(limit, l.CPU), append(floor, f.CPU)
		ratios = append(ratios, float64(p.CPU)/float64(l.CPU))
		floorRatios = append(floorRatios, float64(p.CPU)/float64(f.CPU))
		rss, limitRSS = append(rss, p.MaxRSS), append(limitRSS, l.MaxRSS)
		rssRatios = append(rssRatios, float64(p.MaxRSS)/float64(l.MaxRSS))
		if err := os.RemoveAll(repo); err != nil {
			b.Fatal(err)
		}
	}
	if written != sh.bases {
		b.Fatalf("plan --write changed %d of the %d bases' Deployments, want every one", written, sh.bases)
	}
	r := e2eRow{shape: sh, plan: testenv.Median(plan), limit: testenv.Median(limit), floor: testenv.Median(floor),
		rss: testenv.Median(rss), limitRSS: testenv.Median(limitRSS),
		cpuRatio: testenv.Median(ratios), floorRatio: testenv.Median(floorRatios), rssRatio: testenv.Median(rssRatios)}
	b.ReportMetric(r.cpuRatio, "cpu-ratio")
	b.ReportMetric(r.floorRatio, "floor-ratio")
	b.ReportMetric(r.rssRatio, "rss-ratio")
	b.ReportMetric(r.plan.Seconds(), "plan-cpu-s")
	b.ReportMetric(r.limit.Seconds(), "krusty-cpu-s")
	b.ReportMetric(r.floor.Seconds(), "floor-cpu-s")
	b.ReportMetric(float64(r.rss)/(1<<20), "rss-MiB")
	return r
}

// thousands writes n with a comma between thousands, as the tables do.
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// changedBases counts the bases whose Deployment plan --write changed in
// repo: the edit every overlay of a base asks for goes to the base.
func changedBases(tb testing.TB, template, repo string, bases int) int {
	tb.Helper()
	n := 0
	for i := range bases {
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
