package openmetrics_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// The children of BenchmarkE2ERecorded read the file this names.
const e2eFileEnv = "RECOMMENDER_BENCH_E2E_FILE"

// e2ePodsEnv sets the pods of the end-to-end recording (default 1,000).
const e2ePodsEnv = "RECOMMENDER_BENCH_E2E_PODS"

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
	}
}

// BenchmarkE2ERecorded is the recorded row of issue 23's table: a week at
// 30 s of 1,000 pods (RECOMMENDER_BENCH_E2E_PODS), 12.7 GB, opened keeping
// everything, against the bare scan of the same file, each in a process of
// its own, one round an iteration (-benchtime 3x: three). It reports the
// median of the rounds' CPU ratios and the open's peak RSS over the bytes
// of the samples it keeps, and fails when either is more than a third
// above testdata/bench-e2e.json. `make bench-e2e` runs it.
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
	path := filepath.Join(b.TempDir(), "week.om")
	writeWeekRecording(b, path, pods)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	// Every series of the file is kept: 4 a pod.
	samples := float64(pods*4*weekSamples) * 16
	var ratios []float64
	var open, bare []time.Duration
	var rss, bareRSS []int64
	env := e2eFileEnv + "=" + path
	for b.Loop() {
		f := testenv.Measure(b, testenv.Child("bare", "TestE2EChild", env))
		o := testenv.Measure(b, testenv.Child("open", "TestE2EChild", env))
		bare, open = append(bare, f.CPU), append(open, o.CPU)
		ratios = append(ratios, float64(o.CPU)/float64(f.CPU))
		rss, bareRSS = append(rss, o.MaxRSS), append(bareRSS, f.MaxRSS)
	}
	cpuRatio, rssRatio := testenv.Median(ratios), float64(testenv.Median(rss))/samples
	b.ReportMetric(cpuRatio, "cpu-ratio")
	b.ReportMetric(rssRatio, "rss/samples")
	b.ReportMetric(float64(testenv.Median(rss))/(1<<20), "rss-MiB")
	b.ReportMetric(float64(testenv.Median(bareRSS))/(1<<20), "bare-rss-MiB")
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), map[string]float64{"cpu-ratio": cpuRatio, "rss-ratio": rssRatio})
	testenv.WriteSection(b, filepath.Join("..", "..", "..", "BENCHMARKS.md"), "recorded", fmt.Sprintf(
		"| recording | tool CPU | bare scan CPU | **CPU ratio** | peak RSS | samples kept | **RSS / samples** |\n"+
			"|---|---:|---:|---:|---:|---:|---:|\n"+
			"| %d pods, a week at 30 s, %.1f GB | %.2f s | %.2f s | **%.2f×** | %.0f MiB | %.0f MiB | **%.2f×** |\n",
		pods, float64(fi.Size())/1e9, testenv.Median(open).Seconds(), testenv.Median(bare).Seconds(), cpuRatio,
		float64(testenv.Median(rss))/(1<<20), samples/(1<<20), rssRatio))
}
