package metrics_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestRecordedUsageBrokenContainerIsMissingData: a negative value from one
// container must not lower the pod's sum into valid-looking low usage.
func TestRecordedUsageBrokenContainerIsMissingData(t *testing.T) {
	pod := "chat-7d9f8c6b5d-x2b4z"
	var r metricstest.Recording
	r.Add(metricstest.UsageOf(metricstest.SM, "a", pod, "vllm"), 0, time.Minute, 60, 60, 60)
	r.Add(metricstest.UsageOf(metricstest.SM, "a", pod, "broken"), 0, time.Minute, 0, -50, math.Inf(1))
	rec := r.Parse(t)
	res, err := rec.Usage(context.Background(), usage.Query{At: metricstest.T0.Add(2 * time.Minute), Lookback: time.Hour,
		Metrics: metricstest.KubexMetrics(), Workloads: []usage.Ref{metricstest.Deployment("a", "chat")}})
	require.NoError(t, err)
	s := res.Workloads[metricstest.Deployment("a", "chat")].Pods[0].Series[usage.Compute]
	require.Len(t, s, 3)
	require.Equal(t, 60.0, s[0].V)
	require.True(t, math.IsNaN(s[1].V), "60 + -50 is no usage of 10")
	require.True(t, math.IsNaN(s[2].V))
	v, n, _ := usage.Peak(s)
	require.Equal(t, 60.0, v)
	require.Equal(t, 1, n)
}

// TestRecordedUsageStepPerMetricFromThePast: each metric keeps its own
// scrape interval, inferred from what the query returns, never from the
// samples after the evaluation time.
func TestRecordedUsageStepPerMetricFromThePast(t *testing.T) {
	pod := "chat-7d9f8c6b5d-x2b4z"
	fifteen := make([]any, 4*60)
	for i := range fifteen {
		fifteen[i] = 10
	}
	sixty := make([]any, 60)
	for i := range sixty {
		sixty[i] = 20
	}
	var r metricstest.Recording
	r.Add(metricstest.UsageOf(metricstest.SM, "a", pod, "vllm"), 0, 15*time.Second, fifteen...)
	r.Add(metricstest.UsageOf(metricstest.Mem, "a", pod, "vllm"), 0, time.Minute, sixty...)
	// After the evaluation time memory is scraped every 5 s: that must not
	// make the past look gappy, nor count for anything.
	future := make([]any, 120)
	for i := range future {
		future[i] = 20
	}
	r.Add(metricstest.UsageOf(metricstest.Mem, "a", pod, "vllm"), 61*time.Minute, 5*time.Second, future...)
	rec := r.Parse(t)
	res, err := rec.Usage(context.Background(), usage.Query{At: metricstest.T0.Add(59 * time.Minute), Lookback: time.Hour,
		Metrics: metricstest.KubexMetrics(), Workloads: []usage.Ref{metricstest.Deployment("a", "chat")}})
	require.NoError(t, err)
	w := res.Workloads[metricstest.Deployment("a", "chat")]
	require.Equal(t, 15*time.Second, w.StepOf(usage.Compute))
	require.Equal(t, time.Minute, w.StepOf(usage.Memory))
	require.Equal(t, time.Minute, w.Step, "liveness is judged by the slowest metric")
	c := usage.Cover(w.Pods[0].Series[usage.Memory], usage.WindowEnding(metricstest.T0.Add(59*time.Minute), 30*time.Minute), w.StepOf(usage.Memory))
	require.True(t, c.Complete, "%+v", c)
}
