package metrics_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

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
