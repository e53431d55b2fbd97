package openmetrics_test

import (
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
)

// benchKeep opens the streaming benchmark's recording as plan and run do:
// with the metrics a plan reads, and with `--at` only the window of a
// one-hour lookback before the end.
func benchKeep(b *testing.B, path string) {
	end := metricstest.T0.Add((streamSamples - 1) * time.Minute)
	for _, k := range []struct {
		name string
		opts []openmetrics.Option
	}{
		{name: "needed", opts: []openmetrics.Option{openmetrics.KeepMetrics(metricstest.SM, metricstest.Mem)}},
		{name: "needed-last-hour", opts: []openmetrics.Option{openmetrics.KeepMetrics(metricstest.SM, metricstest.Mem), openmetrics.KeepWindow(end.Add(-time.Hour), end)}},
	} {
		b.Run(k.name, func(b *testing.B) {
			benchOpen(b, path, func() (any, error) { return openmetrics.OpenRecorded(path, k.opts...) })
		})
	}
}
