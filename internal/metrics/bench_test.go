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
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const (
	benchWorkloads = 20
	benchPods      = 2
	benchSamples   = 2 * 24 * 60 // two days at one a minute
)

// BenchmarkUsage is one simulated hour of a backtest: every workload over
// a day's lookback.
func BenchmarkUsage(b *testing.B) {
	r, err := openmetrics.ParseRecorded(bytes.NewReader(metricstest.BacktestRecording(benchWorkloads, benchPods, benchSamples)), "bench.om")
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

// BenchmarkAttributionByName attributes the pods of one namespace by their
// names alone (no kube-state-metrics series), every Deployment of it
// queried: the fallback that cost each pod a scan of every Deployment.
// Its time per pod must not grow with the pods.
func BenchmarkAttributionByName(b *testing.B) {
	for _, pods := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", pods), func(b *testing.B) {
			var ss []metrics.Series
			q := usage.Query{At: metricstest.T0, Lookback: time.Hour, Metrics: metricstest.KubexMetrics()}
			for i := range pods {
				d := fmt.Sprintf("llm-%05d", i)
				pod := d + "-7d9f8c6b5d-x2b4z"
				ss = append(ss, metrics.Series{Metric: metricstest.SM, Labels: []metrics.Label{
					{Name: "container", Value: "server"}, {Name: "namespace", Value: "serving"}, {Name: "pod", Value: pod},
				}, Samples: []usage.Sample{{T: metricstest.T0.UnixMilli(), V: 1}}})
				q.Workloads = append(q.Workloads, metricstest.Deployment("serving", d))
			}
			set := metrics.NewSet("bench", ss, nil)
			b.ReportAllocs()
			for b.Loop() {
				res, err := set.Usage(context.Background(), q)
				if err != nil {
					b.Fatal(err)
				}
				if len(res.Workloads) != pods {
					b.Fatalf("%d workloads, want %d", len(res.Workloads), pods)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(pods), "ns/pod")
		})
	}
}
