package kai_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/kai"
)

// TestPodShare holds the share rule to KAI v0.17.0: the webhook's refusals
// (gpu_request_validator.go) and the scheduler's counting (pod_info.go;
// gpu_resource_requirment.go getExtendedResourceGpus: the portion in two
// places, times the devices).
func TestPodShare(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		whole       int64
		want        kai.Share
		gpus        float64
		ok          bool
		err         string
	}{
		{name: "no GPU", want: kai.Share{}},
		{name: "whole GPUs", whole: 2, want: kai.Whole(2), gpus: 2, ok: true},
		{name: "a fraction", annotations: map[string]string{"gpu-fraction": "0.5"}, want: kai.Share{Portion: 0.5, Devices: 1}, gpus: 0.5, ok: true},
		{name: "a fraction in two places", annotations: map[string]string{"gpu-fraction": "0.333"}, want: kai.Share{Portion: 0.33, Devices: 1}, gpus: 0.33, ok: true},
		{name: "a fraction as the webhook takes it", annotations: map[string]string{"gpu-fraction": "5e-1"}, want: kai.Share{Portion: 0.5, Devices: 1}, gpus: 0.5, ok: true},
		{name: "a fraction on two devices", annotations: map[string]string{"gpu-fraction": "0.3", "gpu-fraction-num-devices": "2"},
			want: kai.Share{Portion: 0.3, Devices: 2}, gpus: 0.6, ok: true},
		{name: "gpu-memory", annotations: map[string]string{"gpu-memory": "4096"}, want: kai.Share{Devices: 1, MemoryMiB: 4096}, ok: true},
		{name: "gpu-memory on two devices", annotations: map[string]string{"gpu-memory": "4096", "gpu-fraction-num-devices": "2"},
			want: kai.Share{Devices: 2, MemoryMiB: 4096}, ok: true},
		{name: "a fraction and whole GPUs", annotations: map[string]string{"gpu-fraction": "0.5"}, whole: 1, err: "gpu-fraction next to nvidia.com/gpu, which KAI refuses"},
		{name: "gpu-memory and a fraction", annotations: map[string]string{"gpu-fraction": "0.5", "gpu-memory": "10"}, err: "gpu-memory next to gpu-fraction or nvidia.com/gpu, which KAI refuses"},
		{name: "devices alone", annotations: map[string]string{"gpu-fraction-num-devices": "2"}, whole: 2, err: "gpu-fraction-num-devices without gpu-fraction or gpu-memory, which KAI refuses"},
		{name: "devices spelt out", annotations: map[string]string{"gpu-fraction": "0.5", "gpu-fraction-num-devices": "two"}, err: `invalid gpu-fraction-num-devices "two": KAI wants a whole number above 0`},
		{name: "a fraction of one", annotations: map[string]string{"gpu-fraction": "1"}, err: `invalid gpu-fraction "1": KAI wants a fraction strictly between 0 and 1`},
		{name: "memory of none", annotations: map[string]string{"gpu-memory": "0"}, err: `invalid gpu-memory "0": KAI wants a whole number of MiB above 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := kai.PodShare(tt.annotations, tt.whole)
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.gpus, got.GPUs())
		})
	}
	require.Equal(t, 0.1, kai.Share{Devices: 2, MemoryMiB: 4096}.MemoryGPUs(81920), "each device's 0.05, rounded up, twice")
	require.Equal(t, 0.04, kai.Share{Devices: 1, MemoryMiB: 3000}.MemoryGPUs(81920), "3000 of 81920 MiB is 0.0366, rounded up")
}

// TestQueuesOver holds the queue rule to KAI v0.17.0's capacity policy:
// an absent quota or limit is 0, -1 is unlimited, equal fits, and every
// parent is checked against what it and its children hold
// (capacity_policy/max_allowed_check.go, quota_check.go;
// proportion.go updateQueuesResourceUsageForAllocatedJob).
func TestQueuesOver(t *testing.T) {
	qs := kai.Queues{
		"org":     {Name: "org", Quota: 4, Limit: 6},
		"team-a":  {Name: "team-a", Parent: "org", Quota: 2, Limit: kai.Unlimited},
		"team-b":  {Name: "team-b", Parent: "org", Quota: kai.Unlimited, Limit: kai.Unlimited},
		"default": {Name: "default"},
	}
	held := map[string]float64{"team-a": 1.5, "team-b": 3}
	tests := []struct {
		name           string
		leaf           string
		more           float64
		nonPreemptible bool
		want           []string
	}{
		{name: "within its own quota, but the parent's quota is held by a sibling", leaf: "team-a", more: 0.5, nonPreemptible: true,
			want: []string{"KAI queue org: 5.00 GPUs over its quota of 4.00"}},
		{name: "a preemptible job needs only the limits", leaf: "team-a", more: 0.5},
		{name: "over the parent's limit too", leaf: "team-a", more: 2, nonPreemptible: true,
			want: []string{"KAI queue team-a: 3.50 GPUs over its quota of 2.00", "KAI queue org: 6.50 GPUs over its limit of 6.00", "KAI queue org: 6.50 GPUs over its quota of 4.00"}},
		{name: "equal fits", leaf: "team-b", more: 1.5, want: nil},
		{name: "past the parent's limit", leaf: "team-b", more: 1.6, want: []string{"KAI queue org: 6.10 GPUs over its limit of 6.00"}},
		{name: "a queue without resources takes no GPU at all", leaf: "default", more: 0.1,
			want: []string{"KAI queue default: 0.10 GPUs over its limit of 0.00"}},
		{name: "an unknown queue is not checked", leaf: "nowhere", more: 10},
		{name: "nothing more asks nothing", leaf: "default", more: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, b := range qs.Over(tt.leaf, held, tt.more, tt.nonPreemptible) {
				got = append(got, b.String())
			}
			require.Equal(t, tt.want, got)
		})
	}
	require.InDelta(t, 1.5, qs.Room("team-a", held, false), 1e-9, "the parent's limit: 6 - 4.5")
	require.InDelta(t, -0.5, qs.Room("team-a", held, true), 1e-9, "the parent's quota is already held past")
	require.True(t, math.IsInf(qs.Room("nowhere", held, true), 1))
	require.True(t, kai.NonPreemptible("Deployment", ""))
	require.False(t, kai.NonPreemptible("StatefulSet", ""))
	require.False(t, kai.NonPreemptible("Deployment", "train"))
	require.True(t, kai.NonPreemptible("StatefulSet", "inference"))
	cycle := kai.Queues{"a": {Name: "a", Parent: "b", Limit: 1}, "b": {Name: "b", Parent: "a", Limit: kai.Unlimited}}
	require.Len(t, cycle.Over("a", map[string]float64{"a": 1}, 1, false), 1, "a cycle ends")
}
