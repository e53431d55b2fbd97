package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const (
	benchWorkloads = 20
	benchPods      = 2
	benchSamples   = 2 * 24 * 60 // two days at one a minute
)

// benchRecording is a recording the size of a backtest's: per pod a compute
// and a memory series and its kube-state-metrics series, a sample a minute,
// written as promtool's dump writes, series after series.
func benchRecording() []byte {
	var b bytes.Buffer
	each := func(series string, value func(i int) string) {
		for i := range benchSamples {
			fmt.Fprintf(&b, "%s %s %d\n", series, value(i), metricstest.T0.Unix()+int64(i)*60)
		}
	}
	for w := range benchWorkloads {
		d := fmt.Sprintf("llm-%02d", w)
		rs := d + "-7d9f8c6b5d"
		each(metricstest.ReplicaSetOwner("serving", rs, "Deployment", d), func(int) string { return "1" })
		for p := range benchPods {
			pod := fmt.Sprintf("%s-x2b%02d", rs, p+20)
			each(metricstest.PodOwner("serving", pod, "ReplicaSet", rs), func(int) string { return "1" })
			each(metricstest.Series("kube_pod_start_time", "namespace", "serving", "pod", pod), func(int) string { return "1699990000" })
			each(metricstest.UsageOf(metricstest.SM, "serving", pod, "server"), func(i int) string { return fmt.Sprintf("%d.5", (i*7+w)%100) })
			each(metricstest.UsageOf(metricstest.Mem, "serving", pod, "server"), func(i int) string { return fmt.Sprintf("%d", 40+(i+p)%13) })
		}
	}
	b.WriteString("# EOF\n")
	return b.Bytes()
}

func BenchmarkParse(b *testing.B) {
	in := benchRecording()
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := metrics.ParseRecorded(bytes.NewReader(in), "bench.om"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bytes.Count(in, []byte("\n"))), "ns/line")
}

// BenchmarkUsage is one simulated hour of a backtest: every workload over
// a day's lookback.
func BenchmarkUsage(b *testing.B) {
	r, err := metrics.ParseRecorded(bytes.NewReader(benchRecording()), "bench.om")
	require.NoError(b, err)
	q := usage.Query{Lookback: 24 * time.Hour, Metrics: metricstest.KubexMetrics()}
	for w := range benchWorkloads {
		q.Workloads = append(q.Workloads, metricstest.Deployment("serving", fmt.Sprintf("llm-%02d", w)))
	}
	b.ReportAllocs()
	hour := 0
	for b.Loop() {
		q.At = metricstest.T0.Add(24*time.Hour + time.Duration(hour%24)*time.Hour)
		hour++
		res, err := r.Usage(context.Background(), q)
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Workloads) != benchWorkloads {
			b.Fatalf("%d workloads, want %d", len(res.Workloads), benchWorkloads)
		}
	}
}
