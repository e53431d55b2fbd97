package neighbours_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/neighbours"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// minutes are n values, one a minute: before for the first start, during
// for the next mid, after for the rest.
func minutes(n, start, mid int, before, during, after any) []any {
	out := make([]any, n)
	for i := range out {
		switch {
		case i < start:
			out[i] = before
		case i < start+mid:
			out[i] = during
		default:
			out[i] = after
		}
	}
	return out
}

// hand is an hour of HAMi's series on three devices, worked by hand:
//   - GPU-aaa on gpu-1 is at 95% for minutes 10 to 51, 42 minutes. chat
//     (share 0.30, two containers at 0.41 and 0.20, behind a ServiceMonitor
//     that renamed its labels exported_*) uses 0.61 then, with its memory
//     at 3 of its 4 GiB; embed (share 0.50) uses 0.34.
//   - GPU-bbb peaks at 80%: never saturated.
//   - GPU-ccc exports no utilization of its own: its one tenant, a pod the
//     placement does not know, uses all of it for 5 minutes.
func hand() *metricstest.Recording {
	r := &metricstest.Recording{}
	step := time.Minute
	r.Add(`hami_host_gpu_utilization_ratio{device_index="0",device_uuid="GPU-aaa",node="gpu-1"}`, 0, step, minutes(60, 10, 42, 50, 95, 60)...)
	r.Add(`hami_host_gpu_utilization_ratio{device_index="1",device_uuid="GPU-bbb",node="gpu-1"}`, 0, step, minutes(60, 10, 42, 50, 80, 60)...)
	c := func(ns, pod, ctr, uuid string) string {
		return `{container="` + ctr + `",device_uuid="` + uuid + `",namespace="` + ns + `",pod="` + pod + `",vdevice_index="0"}`
	}
	exported := func(ns, pod, ctr, uuid string) string {
		return `{container="monitor",device_uuid="` + uuid + `",exported_container="` + ctr + `",exported_namespace="` + ns +
			`",exported_pod="` + pod + `",namespace="hami-system",pod="monitor-x",vdevice_index="0"}`
	}
	r.Add("hami_container_device_utilization_ratio"+exported("ml", "chat-0", "a", "GPU-aaa"), 0, step, minutes(60, 10, 42, 10, 41, 10)...)
	r.Add("hami_container_device_utilization_ratio"+exported("ml", "chat-0", "b", "GPU-aaa"), 0, step, minutes(60, 10, 42, 10, 20, 10)...)
	r.Add("hami_container_device_utilization_ratio"+c("ml", "embed-0", "main", "GPU-aaa"), 0, step, minutes(60, 10, 42, 30, 34, 30)...)
	r.Add("hami_container_device_utilization_ratio"+c("ml", "idle-0", "main", "GPU-bbb"), 0, step, minutes(60, 10, 42, 10, 10, 10)...)
	r.Add("hami_container_device_utilization_ratio"+c("default", "solo", "main", "GPU-ccc"), 0, step, minutes(60, 50, 5, 40, 100, 40)...)
	gib := 1 << 30
	for _, ctr := range []string{"a", "b"} {
		r.Add("hami_vgpu_memory_used_bytes"+exported("ml", "chat-0", ctr, "GPU-aaa"), 0, step, minutes(60, 0, 60, 0, gib+gib/2, 0)...)
		r.Add("hami_vgpu_memory_limit_bytes"+exported("ml", "chat-0", ctr, "GPU-aaa"), 0, step, minutes(60, 0, 60, 0, 2*gib, 0)...)
	}
	return r
}

func deployment(name string) usage.Ref {
	return usage.Ref{Namespace: "ml", Kind: "Deployment", Name: name}
}

func TestFromHAMiAndFind(t *testing.T) {
	ss := hand().Parse(t).Series()
	pods := map[string]neighbours.Pod{
		"ml/chat-0":  {Workload: deployment("chat"), Node: "gpu-1", Share: 0.3},
		"ml/embed-0": {Workload: deployment("embed"), Node: "gpu-1", Share: 0.5},
		"ml/idle-0":  {Workload: deployment("idle"), Node: "gpu-1", Share: 0.2},
	}
	devices := neighbours.FromHAMi(ss, pods)
	end := metricstest.T0.Add(59 * time.Minute)
	tests := []struct {
		name   string
		at     time.Time
		window time.Duration
		want   []neighbours.Finding
	}{
		{
			name: "the hour", at: end, window: time.Hour,
			want: []neighbours.Finding{
				{Node: "", Device: "GPU-ccc", Saturated: 5 * time.Minute, Uses: []neighbours.Use{
					{Pod: "default/solo", Workload: usage.Ref{Namespace: "default", Kind: "Pod", Name: "solo"}, Used: 1, MemoryPeak: -1}}},
				{Node: "gpu-1", Device: "GPU-aaa", Saturated: 42 * time.Minute, Uses: []neighbours.Use{
					{Pod: "ml/chat-0", Workload: deployment("chat"), Share: 0.3, Used: 0.61, Over: true, MemoryPeak: 0.75},
					{Pod: "ml/embed-0", Workload: deployment("embed"), Share: 0.5, Used: 0.34, MemoryPeak: -1}}},
			},
		},
		{
			name: "a window before it all", at: metricstest.T0.Add(9 * time.Minute), window: time.Hour,
		},
		{
			// The last 20 minutes hold minutes 40 to 51 of GPU-aaa's
			// saturation, 12 of them, and all 5 of GPU-ccc's.
			name: "a window that holds part of it", at: end, window: 20 * time.Minute,
			want: []neighbours.Finding{
				{Node: "", Device: "GPU-ccc", Saturated: 5 * time.Minute, Uses: []neighbours.Use{
					{Pod: "default/solo", Workload: usage.Ref{Namespace: "default", Kind: "Pod", Name: "solo"}, Used: 1, MemoryPeak: -1}}},
				{Node: "gpu-1", Device: "GPU-aaa", Saturated: 12 * time.Minute, Uses: []neighbours.Use{
					{Pod: "ml/chat-0", Workload: deployment("chat"), Share: 0.3, Used: 0.61, Over: true, MemoryPeak: 0.75},
					{Pod: "ml/embed-0", Workload: deployment("embed"), Share: 0.5, Used: 0.34, MemoryPeak: -1}}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := neighbours.Find(devices, tt.at, tt.window)
			for i := range got {
				for j := range got[i].Uses {
					got[i].Uses[j].Used = round2(got[i].Uses[j].Used)
				}
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func round2(v float64) float64 { return float64(int(v*100+0.5)) / 100 }

func TestSentences(t *testing.T) {
	f := neighbours.Finding{Node: "gpu-1", Device: "GPU-aaa", Saturated: 42 * time.Minute, Uses: []neighbours.Use{
		{Pod: "ml/chat-0", Workload: deployment("chat"), Share: 0.3, Used: 0.61, Over: true, MemoryPeak: 0.75},
		{Pod: "ml/embed-0", Workload: deployment("embed"), Share: 0.5, Used: 0.34, MemoryPeak: -1},
	}}
	tests := []struct {
		name     string
		hamiCore bool
		find     neighbours.Finding
		want     map[usage.Ref][]string
	}{
		{
			name: "HAMi-core holds memory, not compute", hamiCore: true, find: f,
			want: map[usage.Ref][]string{deployment("chat"): {"while GPU GPU-aaa on gpu-1 was saturated for 42 minutes, chat used 0.61 of it against a share of 0.30, beside embed; " +
				"HAMi-core held its memory (at most 75% of its limit) but does not limit compute: only a compute limit (HAMi's gpucores) would have held it to 0.30"}},
		},
		{
			name: "without HAMi-core nothing is limited", find: f,
			want: map[usage.Ref][]string{deployment("chat"): {"while GPU GPU-aaa on gpu-1 was saturated for 42 minutes, chat used 0.61 of it against a share of 0.30, beside embed; " +
				"without HAMi-core neither its memory nor its compute is limited: a gpu-fraction is what KAI schedules by, not a limit"}},
		},
		{
			name: "no one above their share, no sentence", hamiCore: true,
			find: neighbours.Finding{Node: "gpu-1", Device: "GPU-aaa", Saturated: time.Minute, Uses: f.Uses[1:]},
			want: map[usage.Ref][]string{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.find.Sentences(tt.hamiCore))
		})
	}
}
