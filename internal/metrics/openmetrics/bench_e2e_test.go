package openmetrics_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The children of BenchmarkE2ERecorded read the file this names.
const e2eFileEnv = "RECOMMENDER_BENCH_E2E_FILE"

// e2ePodsEnv sets the pods of the end-to-end recording (default 1,000).
const e2ePodsEnv = "RECOMMENDER_BENCH_E2E_PODS"

// e2eDaysEnv sets the days of the end-to-end recording (default 7), for
// a shorter run while working on it; the committed figures are a week's.
const e2eDaysEnv = "RECOMMENDER_BENCH_E2E_DAYS"

// The "usage" child answers for the fleet e2eFleetEnv says:
// "pods,samples,owners" (owners 0 or 1).
const e2eFleetEnv = "RECOMMENDER_BENCH_E2E_FLEET"

// scaleSamples is the window of the exponent rows: two hours at 30 s,
// so that 10,000 pods stay a file of about a gigabyte and the time of a
// row is its series' rather than a few series' samples.
const scaleSamples = 2 * 60 * 2

// scalePods are the sizes the exponent rows compare.
var scalePods = [2]int{1000, 10000}

// TestE2EChild is a child process of BenchmarkE2ERecorded, and nothing in
// a test run: "open" opens the recording keeping everything, as the
// backtest does; "bare" is the floor, a bufio.Scanner splitting its lines
// and strconv.ParseFloat of each value and timestamp.
func TestE2EChild(t *testing.T) {
	path := os.Getenv(e2eFileEnv)
	switch testenv.E2EChild() {
	case "":
		t.Skip("a child of BenchmarkE2ERecorded")
	case "open":
		if _, err := openmetrics.OpenRecorded(path); err != nil {
			t.Fatal(err)
		}
	case "bare":
		if _, err := bareParse(path); err != nil {
			t.Fatal(err)
		}
	case "usage":
		fl, err := parseFleet(os.Getenv(e2eFleetEnv))
		if err != nil {
			t.Fatal(err)
		}
		answerFleet(t, path, fl)
	}
}

// parseFleet reads a fleet as e2eFleetEnv holds it.
func parseFleet(v string) (fleet, error) {
	var fl fleet
	var owners int
	if _, err := fmt.Sscanf(v, "%d,%d,%d", &fl.pods, &fl.samples, &owners); err != nil {
		return fleet{}, fmt.Errorf("%s=%q: %w", e2eFleetEnv, v, err)
	}
	fl.owners = owners == 1
	return fl, nil
}

// String is fl as e2eFleetEnv holds it.
func (f fleet) String() string {
	owners := 0
	if f.owners {
		owners = 1
	}
	return fmt.Sprintf("%d,%d,%d", f.pods, f.samples, owners)
}

// answerFleet opens the recording of fl at path keeping everything and
// answers, as a plan does, the query of its every Deployment over the
// whole window; it fails t unless each Deployment counts its one pod with
// every sample of it.
func answerFleet(t *testing.T, path string, fl fleet) {
	r, err := openmetrics.OpenRecorded(path)
	if err != nil {
		t.Fatal(err)
	}
	window := time.Duration(fl.samples) * 30 * time.Second
	q := usage.Query{At: metricstest.T0.Add(window - 30*time.Second), Lookback: window, Metrics: metricstest.KubexMetrics()}
	for d := range fl.pods {
		name, _, _, ns := fl.pod(d)
		q.Workloads = append(q.Workloads, metricstest.Deployment(ns, name))
	}
	res, err := r.Usage(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workloads) != fl.pods {
		t.Fatalf("%d workloads answered, want %d", len(res.Workloads), fl.pods)
	}
	for d := range fl.pods {
		name, _, pod, ns := fl.pod(d)
		w := res.Workloads[metricstest.Deployment(ns, name)]
		if len(w.Pods) != 1 || w.Pods[0].Name != pod {
			t.Fatalf("%s/%s: pods %v, want %s", ns, name, podNames(w.Pods), pod)
		}
		for _, m := range []usage.Metric{usage.Compute, usage.Memory} {
			if n := len(w.Pods[0].Series[m]); n != fl.samples {
				t.Fatalf("%s/%s: %d samples of %s, want %d", ns, name, n, m, fl.samples)
			}
		}
	}
}

// podNames names pods, for a failure.
func podNames(pods []usage.Pod) []string {
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = p.Name
	}
	return names
}

// BenchmarkE2ERecorded is the recorded row of the end-to-end table: a week at
// 30 s of 1,000 pods (RECOMMENDER_BENCH_E2E_PODS), 12.7 GB, opened keeping
// everything, against the bare scan of the same file, each in a process of
// its own, one round an iteration (-benchtime 3x: three). It reports the
// median of the rounds' CPU ratios and the open's peak RSS over the bytes
// of the samples it keeps. The CLI row runs the built binary on the same
// file: `recommender plan` of a repository of the fleet's Deployments,
// whose policies read every series the file holds and a week of it (the
// proactive baseline's window); it reports the same two ratios. Each round also measures the exponent rows
// (scaleRows): two hours at 30 s of 1,000 and 10,000 pods, opened and
// answered for every Deployment, with kube-state-metrics' owner series and
// without them (attribution by pod name), each against its bare scan; it
// reports the tool's CPU exponent between the sizes of each. It fails when
// a ratio or an exponent lands outside its tolerance of
// testdata/bench-e2e.json (testenv.Departure). `make bench-e2e` runs it.
func BenchmarkE2ERecorded(b *testing.B) {
	testenv.SkipUnlessE2E(b)
	pods := 1000
	if v := os.Getenv(e2ePodsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a number of pods", e2ePodsEnv, v)
		}
		pods = n
	}
	days := 7
	if v := os.Getenv(e2eDaysEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a number of days", e2eDaysEnv, v)
		}
		days = n
	}
	bin := testenv.BuildRecommender(b)
	dir := b.TempDir()
	path := filepath.Join(dir, "week.om")
	fl := fleet{pods: pods, samples: days * weekSamples / 7, owners: true}
	writeFleetRecording(b, path, fl)
	repo := writeFleetRepo(b, filepath.Join(dir, "repo"), fl)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	scale := newScaleRows(b)
	// Every series of the file is kept: 4 a pod.
	samples := float64(pods*4*fl.samples) * 16
	var open, bare, cli []time.Duration
	var ratios, cliRatios []float64
	var rss, bareRSS, cliRSS []int64
	env := e2eFileEnv + "=" + path
	for b.Loop() {
		f := testenv.Measure(b, testenv.Child("bare", "TestE2EChild", env))
		o := testenv.Measure(b, testenv.Child("open", "TestE2EChild", env))
		c := testenv.Measure(b, planCommand(bin, repo, path))
		checkPlan(b, c.Out, pods)
		bare, open, cli = append(bare, f.CPU), append(open, o.CPU), append(cli, c.CPU)
		ratios = append(ratios, float64(o.CPU)/float64(f.CPU))
		cliRatios = append(cliRatios, float64(c.CPU)/float64(f.CPU))
		rss, bareRSS, cliRSS = append(rss, o.MaxRSS), append(bareRSS, f.MaxRSS), append(cliRSS, c.MaxRSS)
		scale.round(b)
	}
	cpuRatio, rssRatio := testenv.Median(ratios), float64(testenv.Median(rss))/samples
	cliCPURatio, cliRSSRatio := testenv.Median(cliRatios), float64(testenv.Median(cliRSS))/samples
	b.ReportMetric(cpuRatio, "cpu-ratio")
	b.ReportMetric(rssRatio, "rss/samples")
	b.ReportMetric(cliCPURatio, "cli-cpu-ratio")
	b.ReportMetric(cliRSSRatio, "cli-rss/samples")
	b.ReportMetric(float64(testenv.Median(rss))/(1<<20), "rss-MiB")
	b.ReportMetric(float64(testenv.Median(cliRSS))/(1<<20), "cli-rss-MiB")
	b.ReportMetric(float64(testenv.Median(bareRSS))/(1<<20), "bare-rss-MiB")
	owned, byName := scale[0].exponent(), scale[1].exponent()
	b.ReportMetric(owned.tool, "cpu-exponent")
	b.ReportMetric(byName.tool, "by-name-cpu-exponent")
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), map[string]float64{
		"cpu-ratio": cpuRatio, "rss-ratio": rssRatio, "cli-cpu-ratio": cliCPURatio, "cli-rss-ratio": cliRSSRatio,
		"cpu-exponent": owned.tool, "by-name-cpu-exponent": byName.tool})
	row := func(what string, cpu []time.Duration, ratio float64, peak []int64, rssRatio float64) string {
		return fmt.Sprintf("| %d pods, %d days at 30 s, %.1f GB: %s | %.2f s | %.2f s | **%.2f×** | %.0f MiB | %.0f MiB | **%.2f×** |\n",
			pods, days, float64(fi.Size())/1e9, what, testenv.Median(cpu).Seconds(), testenv.Median(bare).Seconds(), ratio,
			float64(testenv.Median(peak))/(1<<20), samples/(1<<20), rssRatio)
	}
	testenv.WriteSection(b, filepath.Join("..", "..", "..", "docs", "benchmarks", "speed.md"), "recorded",
		"| recording | tool CPU | bare scan CPU | **CPU ratio** | peak RSS | samples kept | **RSS / samples** |\n"+
			"|---|---:|---:|---:|---:|---:|---:|\n"+
			row("opened by the package", open, cpuRatio, rss, rssRatio)+
			row("`recommender plan` of its Deployments", cli, cliCPURatio, cliRSS, cliRSSRatio)+"\n"+scale.table())
}

// scaleRow is an exponent row of BenchmarkE2ERecorded: a fleet at each of
// scalePods, answered by the tool (the "usage" child) and scanned bare,
// each in a process of its own, once a round.
type scaleRow struct {
	name  string
	fleet [2]fleet
	path  [2]string
	size  [2]int64
	tool  [2][]time.Duration
	bare  [2][]time.Duration
	rss   [2][]int64
}

// scaleRows are the exponent rows: the fleet with kube-state-metrics'
// owner series, and without them, in one namespace, its pods told by
// their names through the name index.
type scaleRows []*scaleRow

func newScaleRows(b *testing.B) scaleRows {
	rows := scaleRows{
		{name: "owner series, 50 namespaces"},
		{name: "no owner series, one namespace: by pod name"},
	}
	for i, r := range rows {
		for j, pods := range scalePods {
			r.fleet[j] = fleet{pods: pods, samples: scaleSamples, owners: i == 0}
			r.path[j] = filepath.Join(b.TempDir(), fmt.Sprintf("scale-%d-%d.om", i, pods))
			writeFleetRecording(b, r.path[j], r.fleet[j])
			fi, err := os.Stat(r.path[j])
			if err != nil {
				b.Fatal(err)
			}
			r.size[j] = fi.Size()
		}
	}
	return rows
}

// round measures each row at each size once.
func (rows scaleRows) round(b *testing.B) {
	for _, r := range rows {
		for j := range scalePods {
			env := []string{e2eFileEnv + "=" + r.path[j], e2eFleetEnv + "=" + r.fleet[j].String()}
			f := testenv.Measure(b, testenv.Child("bare", "TestE2EChild", env...))
			u := testenv.Measure(b, testenv.Child("usage", "TestE2EChild", env...))
			r.bare[j], r.tool[j] = append(r.bare[j], f.CPU), append(r.tool[j], u.CPU)
			r.rss[j] = append(r.rss[j], u.MaxRSS)
		}
	}
}

// exponents are the CPU exponents of a row from the smaller size to the
// larger: time ∝ pods^k.
type exponents struct{ tool, bare float64 }

func (r *scaleRow) exponent() exponents {
	k := func(d [2][]time.Duration) float64 {
		return math.Log(float64(testenv.Median(d[1]))/float64(testenv.Median(d[0]))) / math.Log(float64(scalePods[1])/float64(scalePods[0]))
	}
	return exponents{tool: k(r.tool), bare: k(r.bare)}
}

// table renders the rows and their exponents.
func (rows scaleRows) table() string {
	var sb strings.Builder
	sb.WriteString("| two hours at 30 s, opened and every Deployment answered | pods | file | tool CPU | bare scan CPU | **CPU ratio** | peak RSS | **tool's CPU exponent** | bare scan's |\n" +
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rows {
		e := r.exponent()
		for j, pods := range scalePods {
			name, exps := "", "| | |"
			if j == 0 {
				name = r.name
			} else {
				exps = fmt.Sprintf("| **%.2f** | %.2f |", e.tool, e.bare)
			}
			tool, bare := testenv.Median(r.tool[j]), testenv.Median(r.bare[j])
			fmt.Fprintf(&sb, "| %s | %d | %.2f GB | %.2f s | %.2f s | **%.2f×** | %.0f MiB %s\n", name, pods, float64(r.size[j])/1e9,
				tool.Seconds(), bare.Seconds(), float64(tool)/float64(bare), float64(testenv.Median(r.rss[j]))/(1<<20), exps)
		}
	}
	return sb.String()
}
