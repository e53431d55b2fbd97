package usage_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// ramp is n samples a minute apart from t0, valued 1..n, with a NaN
// every tenth as broken exporters send.
func ramp(t0 int64, n int) []usage.Sample {
	s := make([]usage.Sample, n)
	for i := range s {
		s[i] = usage.Sample{T: t0 + int64(i)*60_000, V: float64(i + 1)}
		if i%10 == 9 {
			s[i].V = math.NaN()
		}
	}
	return s
}

// halfOfAllocation scales memory by the pod's share, and leaves compute
// as a percent of one GPU, as a chart of a vLLM workload does.
func halfOfAllocation(p usage.Pod, m usage.Metric) (float64, bool) {
	if m == usage.Memory {
		return 1.0 / 100 * max(p.Allocation, 0.5), true
	}
	return 1.0 / 100, true
}

// TestReleaseKeepsWhatReadersNeed: a workload without its samples draws
// the same chart and gives the same digests as with them, and holds no
// sample.
func TestReleaseKeepsWhatReadersNeed(t *testing.T) {
	tests := []struct {
		name   string
		w      usage.Workload
		window time.Duration
		drawn  bool
	}{
		{name: "two pods, two metrics, a day", window: 24 * time.Hour, drawn: true, w: usage.Workload{Pods: []usage.Pod{
			{Name: "a", Allocation: 0.25, Series: map[usage.Metric][]usage.Sample{usage.Compute: ramp(0, 2000), usage.Memory: ramp(0, 2000)}},
			{Name: "b", Series: map[usage.Metric][]usage.Sample{usage.Compute: ramp(600_000, 90)}},
		}}},
		{name: "history shorter than the window", window: 7 * 24 * time.Hour, drawn: true, w: usage.Workload{Pods: []usage.Pod{
			{Name: "a", Series: map[usage.Metric][]usage.Sample{usage.Memory: ramp(0, 100)}},
		}}},
		{name: "no window read", w: usage.Workload{Pods: []usage.Pod{
			{Name: "a", Series: map[usage.Metric][]usage.Sample{usage.Compute: ramp(0, 100)}},
		}}},
		{name: "a pod without samples", window: time.Hour, w: usage.Workload{LiveKnown: true, Pods: []usage.Pod{{Name: "a", Live: true}}}},
		{name: "no pods", window: time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, drawn := tt.w.Chart(tt.window, halfOfAllocation)
			require.Equal(t, tt.drawn, drawn)
			r := tt.w.Release(tt.window, halfOfAllocation)
			require.True(t, r.Released())
			require.False(t, tt.w.Released(), "the workload released is a copy")
			got, gotDrawn := r.Chart(tt.window, halfOfAllocation)
			require.Equal(t, drawn, gotDrawn)
			if drawn {
				require.Equal(t, want, got)
			}
			require.Len(t, r.Pods, len(tt.w.Pods))
			for i, p := range r.Pods {
				require.Nil(t, p.Series, "pod %s keeps no samples", p.Name)
				require.Equal(t, tt.w.Pods[i].Name, p.Name)
				require.Equal(t, tt.w.Pods[i].Digest(), p.Digest())
			}
		})
	}
}

// TestDigest: the 95th percentile is the nearest rank of the valid
// samples; a pod with only invalid samples still counts as sampled.
func TestDigest(t *testing.T) {
	tests := []struct {
		name   string
		series map[usage.Metric][]usage.Sample
		want   usage.Digest
	}{
		{name: "1 to 100, NaN every tenth", series: map[usage.Metric][]usage.Sample{usage.Compute: ramp(0, 100)},
			// 90 valid values, 1..99 without the tens: rank ceil(85.5)=86 is 95.
			want: usage.Digest{Sampled: true, P95: map[usage.Metric]float64{usage.Compute: 95}}},
		{name: "only NaN", series: map[usage.Metric][]usage.Sample{usage.Memory: {{T: 1, V: math.NaN()}}},
			want: usage.Digest{Sampled: true}},
		{name: "none", want: usage.Digest{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, usage.Pod{Series: tt.series}.Digest())
		})
	}
}
