package openmetrics_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
)

// weekPodsEnv sets the pods of BenchmarkOpenRecordedWeek (default 100:
// about 1.3 GB; 1,000 pods write 12.7 GB).
const weekPodsEnv = "RECOMMENDER_BENCH_WEEK_PODS"

// weekSamples is a week at 30 s: 20,160 samples a series, past any fixed
// bound on what a series is given at first.
const weekSamples = 7 * 24 * 60 * 2

// WriteWeekRecording writes a week at 30 s of pods pods, one per
// Deployment, each with the compute and memory series a plan reads and its
// kube_pod_owner and kube_replicaset_owner series, series after series as
// promtool's dump writes them, to path.
func writeWeekRecording(b *testing.B, path string, pods int) {
	writeFleetRecording(b, path, fleet{pods: pods, samples: weekSamples, owners: true})
}

// fleet is a recording of pods, one per Deployment, each pod's series a
// sample every 30 s from metricstest.T0.
type fleet struct {
	pods, samples int
	// owners writes each pod's kube_pod_owner and kube_replicaset_owner
	// series, and spreads the pods over 50 namespaces; without them every
	// pod is in one namespace, and only its name tells its Deployment.
	owners bool
}

// fleetPod names the Deployment of pod d of a fleet, its ReplicaSet, the
// pod and its namespace.
func (f fleet) pod(d int) (name, rs, pod, ns string) {
	name = fmt.Sprintf("llm-%04d", d)
	rs = name + "-7d9f8c6b5d"
	pod = rs + "-x2b4z"
	ns = "serving-00"
	if f.owners {
		ns = fmt.Sprintf("serving-%02d", d%50)
	}
	return name, rs, pod, ns
}

// writeFleetRecording writes fl to path, series after series as
// promtool's dump writes them.
func writeFleetRecording(b *testing.B, path string, fl fleet) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var line []byte
	start := metricstest.T0.Unix()
	each := func(series string, value func(i int) int) {
		for i := range fl.samples {
			line = append(line[:0], series...)
			line = append(line, ' ')
			line = strconv.AppendInt(line, int64(value(i)), 10)
			line = append(line, ' ')
			line = strconv.AppendInt(line, start+int64(i)*30, 10)
			line = append(line, '\n')
			w.Write(line)
		}
	}
	one := func(int) int { return 1 }
	for d := range fl.pods {
		name, rs, pod, ns := fl.pod(d)
		if fl.owners {
			each(metricstest.ReplicaSetOwner(ns, rs, "Deployment", name), one)
			each(metricstest.PodOwner(ns, pod, "ReplicaSet", rs), one)
		}
		each(metricstest.UsageOf(metricstest.SM, ns, pod, "server"), func(i int) int { return (i*7 + d) % 100 })
		each(metricstest.UsageOf(metricstest.Mem, ns, pod, "server"), func(i int) int { return 40 + (i+d)%13 })
	}
	w.WriteString("# EOF\n")
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOpenRecordedWeek opens a week at 30 s of a fleet (the issue's
// recording, scaled to weekPodsEnv pods) keeping everything, and in the
// same iteration runs the bare scan of the same file: cpu-ratio is the
// open's CPU time over the scan's, peak/kept the peak of live heap during
// the open over the bytes of the samples it keeps (16 each).
func BenchmarkOpenRecordedWeek(b *testing.B) {
	pods := 100
	if v := os.Getenv(weekPodsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a number of pods", weekPodsEnv, v)
		}
		pods = n
	}
	path := filepath.Join(b.TempDir(), "week.om")
	writeWeekRecording(b, path, pods)
	var cpuTool, cpuBare time.Duration
	var peak uint64
	kept := 0
	for b.Loop() {
		b.StopTimer()
		c0 := cpuTime(b)
		if _, err := bareParse(path); err != nil {
			b.Fatal(err)
		}
		cpuBare += cpuTime(b) - c0
		runtime.GC()
		var base runtime.MemStats
		runtime.ReadMemStats(&base)
		ph := startPeakHeap()
		c0 = cpuTime(b)
		b.StartTimer()
		r, err := openmetrics.OpenRecorded(path)
		b.StopTimer()
		cpuTool += cpuTime(b) - c0
		if err != nil {
			b.Fatal(err)
		}
		peak = max(peak, ph.Stop()-min(ph.peak, base.HeapAlloc))
		kept = 0
		for _, s := range r.Series() {
			kept += len(s.Samples)
		}
		b.StartTimer()
	}
	samples := float64(kept * 16)
	b.ReportMetric(float64(cpuTool.Milliseconds())/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(cpuBare.Milliseconds())/float64(b.N), "bare-cpu-ms/op")
	b.ReportMetric(float64(cpuTool)/float64(cpuBare), "cpu-ratio")
	b.ReportMetric(samples/(1<<20), "samples-MiB")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
	b.ReportMetric(float64(peak)/samples, "peak/samples")
}
