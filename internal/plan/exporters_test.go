package plan_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// exportersRepo holds two Deployments of two whole GPUs each and one of
// half a GPU, under Kubex-shaped policies whose compute upsizes from 90 %.
const exportersRepo = "testdata/exporters"

// exporterRecording is three hours of the repository's pods as Kubex's
// exporter and kube-state-metrics write them, a sample a minute:
//
//   - even: each of its two GPUs at 55 % memory and 40 % SM;
//   - hot: 40 % memory on both GPUs, SM at 95 % on one and 5 % on the
//     other in the last five minutes (60 % and 5 % before);
//   - chat, on half a GPU: 60 % of its share's memory, SM at 30 % of the
//     GPU, then 55 % in the last three minutes.
//
// SM use is the gauge Kubex's stack records, or with counter the
// exporter's own counter of the same use.
func exporterRecording(counter bool) *metricstest.Recording {
	const (
		n    = 180
		step = time.Minute
	)
	r := new(metricstest.Recording)
	flat := func(v float64) []float64 {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = v
		}
		return vs
	}
	tail := func(before, after float64, last int) []float64 {
		vs := flat(before)
		for i := n - last; i < n; i++ {
			vs[i] = after
		}
		return vs
	}
	add := func(series string, vs []float64) {
		xs := make([]any, len(vs))
		for i, v := range vs {
			xs[i] = v
		}
		r.Add(series, 0, step, xs...)
	}
	sm := func(c metricstest.KubexContainer, device int, vs []float64) {
		if counter {
			r.AddKubexCounter(metricstest.KubexSeries(metricstest.KubexSMCounter, c, device), 0, step, vs...)
			return
		}
		add(metricstest.KubexSeries(metricstest.SM, c, device), vs)
	}
	pod := func(name, rs, deployment string) {
		ones := flat(1)
		add(metricstest.PodOwner("llm", name, "ReplicaSet", rs), ones)
		add(metricstest.ReplicaSetOwner("llm", rs, "Deployment", deployment), ones)
		add(metricstest.Series("kube_pod_start_time", "namespace", "llm", "pod", name, "uid", "u-"+name), flat(float64(metricstest.T0.Add(-time.Hour).Unix())))
		add(metricstest.Series("kube_pod_status_phase", "namespace", "llm", "pod", name, "uid", "u-"+name, "phase", "Running"), ones)
	}

	even := metricstest.KubexContainer{Node: "gpu-a", Namespace: "llm", Pod: "even-6d4b9c8f7-q7v2n", Container: "vllm"}
	pod(even.Pod, "even-6d4b9c8f7", "even")
	for d := range 2 {
		add(metricstest.KubexSeries(metricstest.KubexMemory, even, d), flat(55))
		sm(even, d, flat(40))
	}

	hot := metricstest.KubexContainer{Node: "gpu-b", Namespace: "llm", Pod: "hot-7d9f8c6b5d-x2b4z", Container: "vllm"}
	pod(hot.Pod, "hot-7d9f8c6b5d", "hot")
	for d := range 2 {
		add(metricstest.KubexSeries(metricstest.KubexMemory, hot, d), flat(40))
	}
	sm(hot, 0, tail(60, 95, 5))
	sm(hot, 1, flat(5))

	chat := metricstest.KubexContainer{Node: "gpu-c", Namespace: "llm", Pod: "chat-5f6d7b8c9-bcdfg", Container: "vllm", KAI: true}
	pod(chat.Pod, "chat-5f6d7b8c9", "chat")
	add(metricstest.Series("kube_pod_annotations", "namespace", "llm", "pod", chat.Pod, "uid", "u-"+chat.Pod, "annotation_gpu_fraction", "0.5"), flat(1))
	add(metricstest.KubexSeries(metricstest.KubexMemory, chat, 0), flat(60))
	sm(chat, 0, tail(30, 55, 3))
	return r
}

// exporterAt is the evaluation time: the recording's last sample.
var exporterAt = metricstest.T0.Add(179 * time.Minute)

// decisions renders what a plan decided, a workload a line.
func decisions(p *plan.Plan) string {
	var b strings.Builder
	for _, d := range p.Decisions {
		fmt.Fprintf(&b, "%s: %s %s → %s urgent=%t cause=%s: %s\n", d.Workload.Ref.Name, d.Action, d.Current, d.Recommended, d.Urgent, d.Cause, d.Reason())
	}
	return b.String()
}

// planOn plans the repository on src through the kubex preset, and
// returns what it logged too.
func planOn(t *testing.T, src plan.UsageSource) (*plan.Plan, string) {
	t.Helper()
	var log bytes.Buffer
	p, err := plan.Make(context.Background(), plan.Options{Repo: exportersRepo, At: exporterAt, Source: preset.Wrap(src, preset.Kubex),
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	require.NoError(t, err)
	return p, log.String()
}

// TestDecisionsOnExporterSeries holds the decisions to series shaped as
// Kubex's exporter writes them: one per container and device. A pod of two
// GPUs at 55 % of each device's memory uses 55 % of its allocation, not
// 110 %; one at 95 % of one device's SM is upsized however idle the other
// is; and the exporter's SM counter gives the decisions its recorded gauge
// gives, from a recording and from a real Prometheus alike.
func TestDecisionsOnExporterSeries(t *testing.T) {
	gauge, _ := planOn(t, exporterRecording(false).Parse(t))
	byName := map[string]plan.Decision{}
	for _, d := range gauge.Decisions {
		byName[d.Workload.Ref.Name] = d
	}

	even := byName["even"]
	require.False(t, even.Action.Changes(), "two GPUs at 55 %% each fit two GPUs: %s", even.Reason())
	require.True(t, even.NoUpsizeNeeded(), "no upsize is needed; a scale-back waits for a day of history: %s", even.Reason())

	hot := byName["hot"]
	require.Equal(t, engine.Upsize, hot.Action, hot.Reason())
	require.True(t, hot.Urgent)
	require.Equal(t, 3.0, hot.Recommended.GPUs, "95 %% of each of two GPUs plus 20 %% headroom is 2.28 GPUs: %s", hot.Reason())
	require.Contains(t, hot.Reason(), "compute")

	chat := byName["chat"]
	require.Equal(t, engine.Upsize, chat.Action, chat.Reason())

	counter, log := planOn(t, exporterRecording(true).Parse(t))
	require.Equal(t, decisions(gauge), decisions(counter), "the counter's rate is the gauge")
	require.Contains(t, log, "compute read from "+metricstest.KubexSMCounter, "the preset says which series it reads")

	for _, tc := range []struct {
		name string
		rec  *metricstest.Recording
		want *plan.Plan
	}{{"gauge", exporterRecording(false), gauge}, {"counter", exporterRecording(true), counter}} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "exporters.om")
			require.NoError(t, os.WriteFile(path, []byte(tc.rec.String()), 0o644))
			src, err := prometheus.New(prometheus.Config{URL: testenv.StartPrometheus(t, path).URL, Timeout: 10 * time.Second})
			require.NoError(t, err)
			got, _ := planOn(t, src)
			require.Equal(t, decisions(tc.want), decisions(got), "the server agrees")
		})
	}
}
