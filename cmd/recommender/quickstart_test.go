package main

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
)

var update = flag.Bool("update", false, "rewrite golden files and the quickstart's recorded metrics")

const (
	quickstartRepo    = "../../examples/quickstart"
	quickstartMetrics = quickstartRepo + "/metrics.om"
)

// quickstartAt is the evaluation time of the quickstart: its newest sample.
var quickstartAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// TestQuickstartMetricsFile keeps examples/quickstart/metrics.om equal to
// what quickstartMetricsFile generates: the file is recorded data, but
// crafted, and this is its recipe. Run with -update to regenerate it.
func TestQuickstartMetricsFile(t *testing.T) {
	want := quickstartMetricsFile()
	if *update {
		require.NoError(t, os.WriteFile(quickstartMetrics, want, 0o644))
	}
	got, err := os.ReadFile(quickstartMetrics)
	require.NoError(t, err)
	require.True(t, bytes.Equal(want, got), "%s is stale; run go test ./cmd/recommender -run TestQuickstartMetricsFile -update", quickstartMetrics)
}

// demoPod is one pod of the quickstart's recorded usage.
type demoPod struct {
	namespace, deployment, hash, suffix string
	container                           string
	// age is how long before the evaluation time the pod started; history
	// how far back its samples go (at most age).
	age, history time.Duration
	// compute is percent of one GPU, memory percent of the allocation,
	// as the quickstart's reactive policy reads them; ago is the time
	// before the evaluation. NaN leaves the sample out.
	compute, memory func(ago time.Duration, rng *rand.Rand) float64
}

func (p demoPod) name() string { return p.deployment + "-" + p.hash + "-" + p.suffix }

// noisy returns lo..hi with deterministic noise.
func noisy(lo, hi float64) func(time.Duration, *rand.Rand) float64 {
	return func(_ time.Duration, rng *rand.Rand) float64 { return lo + (hi-lo)*rng.Float64() }
}

// daily follows a day curve between lo and hi, peaking at 14:00 UTC.
func daily(lo, hi float64) func(time.Duration, *rand.Rand) float64 {
	return func(ago time.Duration, rng *rand.Rand) float64 {
		h := float64(quickstartAt.Add(-ago).Hour()) + float64(quickstartAt.Add(-ago).Minute())/60
		shape := (1 + math.Cos((h-14)/24*2*math.Pi)) / 2
		return lo + (hi-lo)*shape*(0.9+0.1*rng.Float64())
	}
}

// lastMinutes returns v for the newest n minutes, else base.
func lastMinutes(n int, v float64, base func(time.Duration, *rand.Rand) float64) func(time.Duration, *rand.Rand) float64 {
	return func(ago time.Duration, rng *rand.Rand) float64 {
		if ago < time.Duration(n)*time.Minute {
			return v
		}
		return base(ago, rng)
	}
}

// hole leaves samples out between from and to minutes ago.
func hole(from, to int, base func(time.Duration, *rand.Rand) float64) func(time.Duration, *rand.Rand) float64 {
	return func(ago time.Duration, rng *rand.Rand) float64 {
		v := base(ago, rng)
		if ago > time.Duration(from)*time.Minute && ago < time.Duration(to)*time.Minute {
			return math.NaN()
		}
		return v
	}
}

// quickstartPods is the story the quickstart's plan tells, pod by pod.
func quickstartPods() []demoPod {
	const h = time.Hour
	return []demoPod{
		// chat: compute reached 120% of its 0.50 in the last two minutes
		// (one replica), so the plan upsizes it.
		{namespace: "inference", deployment: "chat", hash: "7c9d8b5f6d", suffix: "x2k4q", container: "vllm", age: 50 * h, history: 3 * h,
			compute: lastMinutes(2, 60, noisy(22, 30)), memory: noisy(58, 62)},
		{namespace: "inference", deployment: "chat", hash: "7c9d8b5f6d", suffix: "p7w9z", container: "vllm", age: 50 * h, history: 3 * h,
			compute: noisy(20, 28), memory: noisy(57, 61)},
		// summarize: a quiet day at 0.60: scale back to the baseline.
		{namespace: "inference", deployment: "summarize", hash: "6b8f9c7d5", suffix: "t4hxm", container: "server", age: 30 * h, history: 26 * h,
			compute: daily(8, 25), memory: noisy(43, 45)},
		// embed: quiet too, but five scrapes went missing minutes ago.
		{namespace: "inference", deployment: "embed", hash: "5d7c8f9b6", suffix: "mq2zr", container: "tei", age: 30 * h, history: 26 * h,
			compute: hole(3, 9, daily(4, 10)), memory: hole(3, 9, noisy(29, 31))},
		// rerank: rolled out five minutes ago; too young to judge.
		{namespace: "inference", deployment: "rerank", hash: "84f6d9c7b", suffix: "w5lks", container: "tei", age: 5 * time.Minute, history: 5 * time.Minute,
			compute: noisy(35, 45), memory: noisy(65, 75)},
		// asr-whisper: a whole GPU, a fifth of it used; moves to KAI.
		{namespace: "inference", deployment: "asr-whisper", hash: "9f5c7d8b4", suffix: "zp4nb", container: "whisper", age: 30 * h, history: 26 * h,
			compute: daily(5, 15), memory: noisy(18, 20)},
		// translate: memory past its allocation (no HAMi-core to stop it).
		{namespace: "inference", deployment: "translate", hash: "6c4d9f7b8", suffix: "vr2hg", container: "vllm", age: 20 * h, history: 3 * h,
			compute: noisy(10, 18), memory: lastMinutes(2, 105, noisy(80, 90))},
		// ocr: busy, but out of scope.
		{namespace: "inference", deployment: "ocr", hash: "7b5d6c8f9", suffix: "kq9xd", container: "paddle", age: 20 * h, history: 3 * h,
			compute: noisy(25, 35), memory: noisy(45, 55)},
		// Decoys, hot so that a leak would show: a canary whose name
		// starts with "chat-", and a pod in another namespace with the
		// same name as summarize's.
		{namespace: "inference", deployment: "chat-canary", hash: "5f8b7c6d9", suffix: "h2nvs", container: "vllm", age: 20 * h, history: 3 * h,
			compute: noisy(90, 95), memory: noisy(95, 99)},
		{namespace: "staging", deployment: "summarize", hash: "6b8f9c7d5", suffix: "t4hxm", container: "server", age: 20 * h, history: 3 * h,
			compute: noisy(85, 95), memory: noisy(90, 99)},
	}
}

// quickstartMetricsFile renders the quickstart's recorded usage as
// OpenMetrics text with timestamps, the format promtool backfills.
func quickstartMetricsFile() []byte {
	const step = time.Minute
	const ksmHistory = 30 * time.Minute // kube-state-metrics: recent only, to keep the file small
	var b strings.Builder
	type series struct {
		labels string
		values func(time.Duration, *rand.Rand) float64
		from   time.Duration
		seed   uint64
	}
	family := func(name, help string, ss []series) {
		fmt.Fprintf(&b, "# TYPE %s gauge\n# HELP %s %s\n", name, name, help)
		for _, s := range ss {
			rng := rand.New(rand.NewPCG(s.seed, 7))
			for ago := s.from; ago >= 0; ago -= step {
				v := s.values(ago, rng)
				if math.IsNaN(v) {
					continue
				}
				fmt.Fprintf(&b, "%s{%s} %s %d\n", name, s.labels, formatValue(v), quickstartAt.Add(-ago).Unix())
			}
		}
	}
	pods := quickstartPods()
	var compute, memory, owner, start, phase []series
	rsOwner := map[string]series{}
	for i, p := range pods {
		// As Kubex's gpu-process-exporter labels a container's series on
		// its device (metricstest.KubexLabels), and as kube-state-metrics
		// v2.20.0 labels a pod's (a uid on each).
		l := metricstest.KubexLabels(metricstest.KubexContainer{Node: fmt.Sprintf("gpu-node-%d", i%3+1), Namespace: p.namespace,
			Pod: p.name(), Container: p.container, KAI: p.deployment != "asr-whisper"}, 0)
		compute = append(compute, series{labels: l, values: p.compute, from: p.history, seed: uint64(2 * i)})
		memory = append(memory, series{labels: l, values: p.memory, from: p.history, seed: uint64(2*i + 1)})
		rs := p.deployment + "-" + p.hash
		ksm := min(ksmHistory, p.age)
		one := func(time.Duration, *rand.Rand) float64 { return 1 }
		zero := func(time.Duration, *rand.Rand) float64 { return 0 }
		uid := metricstest.PodUID(p.namespace, p.name())
		owner = append(owner, series{labels: fmt.Sprintf(`namespace="%s",pod="%s",uid="%s",owner_kind="ReplicaSet",owner_name="%s",owner_is_controller="true"`,
			p.namespace, p.name(), uid, rs), values: one, from: ksm})
		started := float64(quickstartAt.Add(-p.age).Unix())
		start = append(start, series{labels: fmt.Sprintf(`namespace="%s",pod="%s",uid="%s"`, p.namespace, p.name(), uid),
			values: func(time.Duration, *rand.Rand) float64 { return started }, from: ksm})
		for _, ph := range []string{"Pending", "Succeeded", "Failed", "Unknown", "Running"} {
			v := zero
			if ph == "Running" {
				v = one
			}
			phase = append(phase, series{labels: fmt.Sprintf(`namespace="%s",pod="%s",uid="%s",phase="%s"`, p.namespace, p.name(), uid, ph), values: v, from: ksm})
		}
		rsOwner[p.namespace+"/"+rs] = series{labels: fmt.Sprintf(`namespace="%s",replicaset="%s",owner_kind="Deployment",owner_name="%s",owner_is_controller="true"`,
			p.namespace, rs, p.deployment), values: one, from: ksm}
	}
	var replicasets []series
	keys := make([]string, 0, len(rsOwner))
	for k := range rsOwner {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		replicasets = append(replicasets, rsOwner[k])
	}
	// The help texts are the exporters' own: Kubex's stack records the
	// SM gauge without one (a recording rule), the exporter's memory
	// gauge says "Percent", kube-state-metrics' are v2.20.0's.
	family("kubex_gpu_container_sm_utilization_percent", "SM utilization, the rate over 1m of kubex_gpu_container_sm_utilization_percent_seconds_total.", compute)
	family("kubex_gpu_container_memory_footprint_percent", "Percent", memory)
	family("kube_pod_owner", "[STABLE] Information about the Pod's owner.", owner)
	family("kube_replicaset_owner", "[STABLE] Information about the ReplicaSet's owner.", replicasets)
	family("kube_pod_start_time", "[STABLE] Start time in unix timestamp for a pod.", start)
	family("kube_pod_status_phase", "[STABLE] The pods current phase.", phase)
	b.WriteString("# EOF\n")
	return []byte(b.String())
}

// formatValue renders a sample value compactly and exactly as it will be read.
func formatValue(v float64) string {
	return fmt.Sprintf("%.2f", math.Round(v*100)/100)
}

// golden compares got with testdata/name, rewriting it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(path, got, 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "run with -update to create %s", path)
	require.Equal(t, string(want), string(got))
}
