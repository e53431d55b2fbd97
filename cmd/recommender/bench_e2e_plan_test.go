package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// The plan rows of the end-to-end table: `recommender plan` (and `plan
// --write`) on a generated repository of Deployments, against the limit
// for the same files, a walk, a read and a yaml.v3 decode of every one.
// Each side runs in a process of its own: the tool as the built binary,
// the limit as this test binary run again (TestE2EPlanChild).

// e2eRepoEnv names the repository TestE2EPlanChild decodes.
const e2eRepoEnv = "RECOMMENDER_BENCH_E2E_REPO"

// e2ePlanEnv sets the Deployments of the large repositories (default
// 10,000); the small ones have a tenth, for the exponent.
const e2ePlanEnv = "RECOMMENDER_BENCH_E2E_DEPLOYMENTS"

// e2eEveryEnv says which Deployments the recording edits: one in every
// so many, by number (d00000 is always one).
const e2eEveryEnv = "RECOMMENDER_BENCH_E2E_EVERY"

// TestE2EPlanChild is a child of BenchmarkE2EPlan, and nothing in a test
// run. As "decode" it is the limit: every .yaml file under the repository
// read and decoded with yaml.v3 into node trees, as the tool must at least
// do. As "floor" and "floor-write" it is the least the design itself must
// do (docs/design.md §10, invariant 2). Every edit here swaps scalars in
// place, which the proof reads without decoding the document again: so
// the floor is that decode and, writing, each edited file read again to
// see it unchanged, its bytes put in a temporary file beside it, renamed
// over it, the file system synced before and after the renames, two files
// at a time, as the tool writes.
func TestE2EPlanChild(t *testing.T) {
	mode := testenv.E2EChild()
	if mode != "decode" && mode != "floor" && mode != "floor-write" {
		t.Skip("a child of BenchmarkE2EPlan")
	}
	root := os.Getenv(e2eRepoEnv)
	every, err := strconv.Atoi(os.Getenv(e2eEveryEnv))
	if mode != "decode" && (err != nil || every < 1) {
		t.Fatalf("%s=%q: want one edit in every so many Deployments", e2eEveryEnv, os.Getenv(e2eEveryEnv))
	}
	files, err := yamlFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	docs := 0
	var edited []string
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		n, err := decodeAll(b)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		docs += n
		if mode == "decode" {
			continue
		}
		var f int
		if _, err := fmt.Sscanf(filepath.Base(filepath.Dir(p)), "f%d", &f); err != nil {
			continue // the policies: never edited
		}
		for i := range n {
			if (f*n+i)%every == 0 {
				edited = append(edited, p)
				break
			}
		}
	}
	if docs == 0 {
		t.Fatal("no documents")
	}
	if mode == "floor-write" {
		if err := rewriteAll(root, edited); err != nil {
			t.Fatal(err)
		}
	}
}

// yamlFiles walks root for its .yaml files.
func yamlFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	return files, err
}

// decodeAll decodes every document of b with yaml.v3, returning how many.
func decodeAll(b []byte) (int, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for docs := 0; ; docs++ {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return docs, err
		}
	}
}

// rewriteAll replaces each file with its own bytes as the tool replaces a
// file: read again, a temporary file beside it with its mode, a rename;
// two files at a time, with a syncfs before the renames and one after.
func rewriteAll(root string, files []string) error {
	tmps := make([]string, len(files))
	if err := twoAtATime(len(files), func(i int) error {
		b, err := os.ReadFile(files[i])
		if err != nil {
			return err
		}
		tmps[i] = files[i] + ".floor.tmp"
		return os.WriteFile(tmps[i], b, 0o644)
	}); err != nil {
		return err
	}
	if err := syncfs(root); err != nil {
		return err
	}
	if err := twoAtATime(len(files), func(i int) error { return os.Rename(tmps[i], files[i]) }); err != nil {
		return err
	}
	return syncfs(root)
}

func twoAtATime(n int, do func(i int) error) error {
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := w; i < n && errs[w] == nil; i += 2 {
				errs[w] = do(i)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// e2ePlanCase is one row: the Deployments, how many a file holds, one
// edit in every how many Deployments, and whether the plan is written.
type e2ePlanCase struct {
	deployments, perFile, every int
	write                       bool
}

func (c e2ePlanCase) name() string {
	cmd, edited := "plan", "all edited"
	if c.write {
		cmd = "plan --write"
	}
	if c.every > 1 {
		edited = fmt.Sprintf("1 in %d edited", c.every)
	}
	return fmt.Sprintf("`%s`, %d Deployments, %d a file, %s", cmd, c.deployments, c.perFile, edited)
}

// key names the row's figures in testdata/bench-e2e.json:
// plan-per10-all-cpu-ratio, write-per1-tenth-floor-ratio, and so on.
func (c e2ePlanCase) key() string {
	cmd, edited := "plan", "all"
	if c.write {
		cmd = "write"
	}
	if c.every > 1 {
		edited = "tenth"
	}
	return fmt.Sprintf("%s-per%d-%s", cmd, c.perFile, edited)
}

// editedFiles is how many files of c the plan edits.
func (c e2ePlanCase) editedFiles() int {
	n := 0
	for f := range c.deployments / c.perFile {
		for i := range c.perFile {
			if (f*c.perFile+i)%c.every == 0 {
				n++
				break
			}
		}
	}
	return n
}

// BenchmarkE2EPlan is the plan rows of the end-to-end table: `plan` and
// `plan --write` of 10,000 Deployments, one a file and ten a file, with a
// recording that makes one Deployment in ten an edit (an urgent upsize of
// its gpu-fraction and vLLM flag; the others use what they have), and
// one that makes every Deployment an edit. Each again at 1,000 for the
// exponent (time grows as size^exponent). Beside the limit, the floor of
// the design in the same run (TestE2EPlanChild's "floor"): the decode,
// each edited document decoded again alone, and for --write the edited
// files replaced as the tool replaces them. One round an iteration
// (-benchtime 3x: three); medians of the CPU ratios. It fails when a
// figure lands outside its tolerance of testdata/bench-e2e.json
// (testenv.Departure). `make bench-e2e` runs it.
func BenchmarkE2EPlan(b *testing.B) {
	testenv.SkipUnlessE2E(b)
	large := 10000
	if v := os.Getenv(e2ePlanEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 100 {
			b.Fatalf("%s=%q: want a number of Deployments, at least 100", e2ePlanEnv, v)
		}
		large = n
	}
	bin := testenv.BuildRecommender(b)
	var cases []e2ePlanCase
	for _, write := range []bool{false, true} {
		for _, perFile := range []int{1, 10} {
			for _, every := range []int{10, 1} {
				cases = append(cases, e2ePlanCase{large, perFile, every, write}, e2ePlanCase{large / 10, perFile, every, write})
			}
		}
	}
	type row struct {
		tool, limit, floor  []time.Duration
		ratios, floorRatios []float64
		rss                 []int64
	}
	rows := make([]row, len(cases))
	for b.Loop() {
		for i, c := range cases {
			b.StopTimer()
			repo, om := planRepo(b, b.TempDir(), c)
			b.StartTimer()
			lim := testenv.Measure(b, testenv.Child("decode", "TestE2EPlanChild", e2eRepoEnv+"="+repo))
			floorMode := "floor"
			if c.write {
				floorMode = "floor-write"
			}
			floor := testenv.Measure(b, testenv.Child(floorMode, "TestE2EPlanChild", e2eRepoEnv+"="+repo, e2eEveryEnv+"="+strconv.Itoa(c.every)))
			args := []string{"plan", "--repo", repo, "--metrics-file", om, "-o", "json"}
			if c.write {
				args = append(args, "--write")
			}
			tool := testenv.Measure(b, exec.Command(bin, args...))
			var p struct{ Edits []json.RawMessage }
			if err := json.Unmarshal([]byte(tool.Out), &p); err != nil || len(p.Edits) != c.editedFiles() {
				b.Fatalf("%s: %d files edited, want %d (%v)", c.name(), len(p.Edits), c.editedFiles(), err)
			}
			r := &rows[i]
			r.tool, r.limit = append(r.tool, tool.CPU), append(r.limit, lim.CPU)
			r.ratios = append(r.ratios, float64(tool.CPU)/float64(lim.CPU))
			r.floor = append(r.floor, floor.CPU)
			r.floorRatios = append(r.floorRatios, float64(tool.CPU)/float64(floor.CPU))
			r.rss = append(r.rss, tool.MaxRSS)
			b.StopTimer()
			if err := os.RemoveAll(filepath.Dir(repo)); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
	figures := map[string]float64{}
	var table strings.Builder
	// Medians, and beside the ratios and the RSS their range over the
	// rounds: two runs of this table twenty minutes apart once differed
	// by a quarter on one row.
	table.WriteString("| run | tool CPU | decode CPU | **CPU ratio** (rounds) | design floor CPU | **tool ÷ floor** | peak RSS (rounds) | exponent, 1/10 the size to this |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for i, c := range cases {
		r := rows[i]
		ratio := testenv.Median(r.ratios)
		fmt.Fprintf(&table, "| %s | %.2f s | %.2f s | **%.2f×** (%.2f–%.2f) | %.2f s | **%.2f×** | %.0f MiB (%.0f–%.0f) |", c.name(), testenv.Median(r.tool).Seconds(),
			testenv.Median(r.limit).Seconds(), ratio, slices.Min(r.ratios), slices.Max(r.ratios),
			testenv.Median(r.floor).Seconds(), testenv.Median(r.floorRatios),
			float64(testenv.Median(r.rss))/(1<<20), float64(slices.Min(r.rss))/(1<<20), float64(slices.Max(r.rss))/(1<<20))
		if i%2 == 0 {
			// time ∝ size^k: k = log(t_large/t_small) / log(10)
			size := math.Log(float64(c.deployments) / float64(cases[i+1].deployments))
			k := math.Log(float64(testenv.Median(r.tool))/float64(testenv.Median(rows[i+1].tool))) / size
			kf := math.Log(float64(testenv.Median(r.floor))/float64(testenv.Median(rows[i+1].floor))) / size
			fmt.Fprintf(&table, " %.2f (floor %.2f) |\n", k, kf)
			b.ReportMetric(k, c.key()+"-exponent")
			figures[c.key()+"-exponent"] = k
		} else {
			table.WriteString(" |\n")
		}
		if c.deployments == large {
			b.ReportMetric(ratio, c.key()+"-cpu-ratio")
			figures[c.key()+"-cpu-ratio"] = ratio
			b.ReportMetric(testenv.Median(r.floorRatios), c.key()+"-floor-ratio")
			figures[c.key()+"-floor-ratio"] = testenv.Median(r.floorRatios)
		}
	}
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), figures)
	testenv.WriteSection(b, filepath.Join("..", "..", "docs", "benchmarks", "speed.md"), "plan", table.String())
}

// planRepo writes the repository of c, with the quickstart's policies,
// and a recording of twenty minutes at 60 s in which every pod of one
// Deployment in c.every uses 60 % of a whole GPU against its 0.5: an
// urgent upsize for each. The others' pods use what they have. It returns the repository and the recording, both in dir.
func planRepo(b testing.TB, dir string, c e2ePlanCase) (repo, om string) {
	repo = filepath.Join(dir, "repo")
	pol, err := os.ReadFile(filepath.Join(quickstartRepo, "policies", "kai-gpu-sharing.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	write := func(rel string, data []byte) {
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("policies/kai-gpu-sharing.yaml", pol)
	for f := range c.deployments / c.perFile {
		var buf bytes.Buffer
		for i := range c.perFile {
			if i > 0 {
				buf.WriteString("---\n")
			}
			// The policies select Deployments that say they use a GPU.
			buf.WriteString(strings.Replace(kubeenv.Deployment(fmt.Sprintf("d%05d", f*c.perFile+i)),
				"    kai.scheduler/queue: serving\n", "    kai.scheduler/queue: serving\n    nvidia.com/gpu.present: \"true\"\n", 1))
		}
		write(fmt.Sprintf("apps/f%05d/deployment.yaml", f), buf.Bytes())
	}
	om = filepath.Join(dir, "usage.om")
	fh, err := os.Create(om)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(fh, 1<<20)
	start := metricstest.T0.Unix()
	each := func(series, value string) {
		for i := range 20 {
			fmt.Fprintf(w, "%s %s %d\n", series, value, start+int64(i)*60)
		}
	}
	for d := range c.deployments {
		name := fmt.Sprintf("d%05d", d)
		rs, pod := name+"-7d9f8c6b5d", name+"-7d9f8c6b5d-x2b4z"
		// 60 % of a GPU against 0.5 is an urgent upsize. 40 % of it, and
		// 80 % of the memory granted, are under 0.5 with the headroom,
		// and a scale-back needs a day of history: no change.
		sm, mem := "60", "50"
		if d%c.every != 0 {
			sm, mem = "40", "80"
		}
		each(metricstest.ReplicaSetOwner("serving", rs, "Deployment", name), "1")
		each(metricstest.PodOwner("serving", pod, "ReplicaSet", rs), "1")
		each(metricstest.Series("kube_pod_start_time", "namespace", "serving", "pod", pod, "uid", "u-"+pod), strconv.FormatInt(start-3600, 10))
		each(metricstest.UsageOf(metricstest.SM, "serving", pod, "vllm"), sm)
		each(metricstest.UsageOf("kubex_gpu_container_memory_footprint_percent", "serving", pod, "vllm"), mem)
	}
	w.WriteString("# EOF\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		b.Fatal(err)
	}
	return repo, om
}
