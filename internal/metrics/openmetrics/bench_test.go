package openmetrics_test

import (
	"bytes"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
)

func BenchmarkParse(b *testing.B) {
	in := metricstest.BacktestRecording(20, 2, 2*24*60) // a backtest's: two days at one a minute
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := openmetrics.ParseRecorded(bytes.NewReader(in), "bench.om"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(bytes.Count(in, []byte("\n"))), "ns/line")
}
