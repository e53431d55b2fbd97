package prometheus_test

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

const (
	quickstartRepo    = "../../../examples/quickstart"
	quickstartMetrics = "../../../examples/quickstart/metrics.om"
)

// quickstartAt is the evaluation time of the quickstart's golden plan.
var quickstartAt = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// newPrometheus returns a source for url with a short timeout, as tests
// want failures fast.
func newPrometheus(t *testing.T, url string, change ...func(*prometheus.Config)) *prometheus.Source {
	t.Helper()
	cfg := prometheus.Config{URL: url, Timeout: 5 * time.Second}
	for _, f := range change {
		f(&cfg)
	}
	p, err := prometheus.New(cfg)
	require.NoError(t, err)
	return p
}

// makePlan plans the quickstart from src.
func makePlan(t *testing.T, src plan.UsageSource) *plan.Plan {
	t.Helper()
	p, err := plan.Make(context.Background(), plan.Options{Repo: quickstartRepo, At: quickstartAt, Source: src})
	require.NoError(t, err)
	return p
}

func planJSON(t *testing.T, p *plan.Plan) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, p.WriteJSON(&b))
	return b.String()
}

// The recording and the server it is backfilled into give the same usage,
// so the same plan: they share the attribution code, and the server is
// read for raw samples.
func TestPrometheusAgreesWithRecording(t *testing.T) {
	srv := testenv.StartPrometheus(t, quickstartMetrics, filepath.Join("..", "testdata", "cluster.om"), filepath.Join("..", "testdata", "prometheus.om"))
	prom := newPrometheus(t, srv.URL)

	t.Run("quickstart plan, byte for byte", func(t *testing.T) {
		rec, err := openmetrics.OpenRecorded(quickstartMetrics)
		require.NoError(t, err)
		want := makePlan(t, rec)
		got := makePlan(t, prom)
		require.Equal(t, planJSON(t, want), planJSON(t, got))
		require.NotEmpty(t, want.Queries)
		for _, q := range want.Queries {
			wantRes, err := rec.Usage(context.Background(), q)
			require.NoError(t, err)
			gotRes, err := prom.Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, fmt.Sprintf("%+v", wantRes.Workloads), fmt.Sprintf("%+v", gotRes.Workloads))
		}
	})

	tests := []struct {
		name      string
		file      string
		at        time.Duration
		lookback  time.Duration
		metrics   map[usage.Metric]usage.Mapping
		workloads []usage.Ref
	}{
		{
			name: "cluster: owners, liveness, start", file: "cluster.om", at: 9 * time.Minute, lookback: time.Hour,
			workloads: []usage.Ref{
				metricstest.Deployment("team-a", "chat"), metricstest.Deployment("team-a", "chat-canary"),
				{Namespace: "team-a", Kind: "StatefulSet", Name: "embed"},
				metricstest.Deployment("team-a", "ghost"), metricstest.Deployment("team-b", "chat"),
			},
		},
		{
			name: "cluster: an earlier time", file: "cluster.om", at: 3 * time.Minute, lookback: time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat")},
		},
		{
			name: "cluster: a window shorter than the data", file: "cluster.om", at: 9 * time.Minute, lookback: 4 * time.Minute,
			workloads: []usage.Ref{metricstest.Deployment("team-a", "chat"), metricstest.Deployment("team-a", "chat-canary")},
		},
		{
			name: "exported labels, NaN and Inf, a gap, gpu-fraction annotations", file: "prometheus.om", at: 30 * time.Minute, lookback: time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-x", "chat"), metricstest.Deployment("team-x", "gappy"), metricstest.Deployment("team-x", "shared")},
		},
		{
			name: "a lookback of two days spans chunks", file: "prometheus.om", at: 30 * time.Minute, lookback: 48 * time.Hour,
			workloads: []usage.Ref{metricstest.Deployment("team-x", "chat"), metricstest.Deployment("team-x", "gappy"), metricstest.Deployment("team-x", "shared")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := openmetrics.OpenRecorded(filepath.Join("..", "testdata", tt.file))
			require.NoError(t, err)
			ms := tt.metrics
			if ms == nil {
				ms = metricstest.KubexMetrics()
			}
			q := usage.Query{At: metricstest.T0.Add(tt.at), Lookback: tt.lookback, Metrics: ms, Workloads: tt.workloads}
			want, err := rec.Usage(context.Background(), q)
			require.NoError(t, err)
			got, err := prom.Usage(context.Background(), q)
			require.NoError(t, err)
			require.NotEmpty(t, want.Workloads)
			require.Equal(t, metricstest.Workloads(want), metricstest.Workloads(got))
			if shared, ok := want.Workloads[metricstest.Deployment("team-x", "shared")]; ok {
				// Each pod is read against the gpu-fraction it was created
				// with, from kube_pod_annotations.
				require.Len(t, shared.Pods, 2)
				require.Equal(t, []float64{0.3, 0.5}, []float64{shared.Pods[0].Allocation, shared.Pods[1].Allocation})
			}
			// Beyond what render shows (allocations, steps); %v, as NaN is
			// not equal to itself.
			require.Equal(t, fmt.Sprintf("%+v", want.Workloads), fmt.Sprintf("%+v", got.Workloads))
		})
	}
}

// manyDeployments writes a recording of n Deployments of one pod each,
// spread over namespaces, with owners and a few samples, and returns the
// workloads.
func manyDeployments(t *testing.T, dir, prefix string, n int) (string, []usage.Ref) {
	t.Helper()
	var b strings.Builder
	var refs []usage.Ref
	const samples = 5
	type line struct{ series, value string }
	var lines []line
	for i := range n {
		ns := fmt.Sprintf("%s-%d", prefix, i%50)
		d := fmt.Sprintf("app-%d", i)
		rs := d + "-7d9f8c6b5d"
		pod := rs + "-x2b4z"
		refs = append(refs, metricstest.Deployment(ns, d))
		lines = append(lines,
			line{metricstest.UsageOf(metricstest.SM, ns, pod, "server"), "20"},
			line{metricstest.UsageOf(metricstest.Mem, ns, pod, "server"), "30"},
			line{metricstest.PodOwner(ns, pod, "ReplicaSet", rs), "1"},
			line{metricstest.ReplicaSetOwner(ns, rs, "Deployment", d), "1"},
		)
	}
	// OpenMetrics wants one metric family together.
	for _, family := range []string{metricstest.SM + "{", metricstest.Mem + "{", "kube_pod_owner{", "kube_replicaset_owner{"} {
		for _, l := range lines {
			if !strings.HasPrefix(l.series, family) {
				continue
			}
			for k := range samples {
				fmt.Fprintf(&b, "%s %s %d\n", l.series, l.value, metricstest.T0.Add(time.Duration(k)*time.Minute).Unix())
			}
		}
	}
	b.WriteString("# EOF\n")
	path := filepath.Join(dir, prefix+".om")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	return path, refs
}

// The number of requests depends on the query's metrics and window, never
// on how many workloads it asks for.
func TestPrometheusRequestsDoNotGrowWithWorkloads(t *testing.T) {
	dir := t.TempDir()
	small, few := manyDeployments(t, dir, "small", 10)
	big, many := manyDeployments(t, dir, "big", 1000)
	srv := testenv.StartPrometheus(t, small, big)
	if srv == nil {
		return
	}
	proxy := testenv.NewFaultProxy(t, srv.URL)
	prom := newPrometheus(t, proxy.URL)

	count := func(refs []usage.Ref) int {
		t.Helper()
		before := proxy.Requests()
		res, err := prom.Usage(context.Background(), usage.Query{
			At: metricstest.T0.Add(4 * time.Minute), Lookback: 2 * 24 * time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: refs,
		})
		require.NoError(t, err)
		require.Len(t, res.Workloads, len(refs))
		for _, w := range res.Workloads {
			require.Len(t, w.Pods, 1)
			require.True(t, w.LiveKnown)
		}
		return proxy.Requests() - before
	}
	n10, n1000 := count(few), count(many)
	// Two selectors (the namespace label and its exported_ form), each
	// asked for the oldest 15 minutes of the two days first, then, its
	// answers being small, for the rest in two pieces of at most a day;
	// and the two of the pods' ending phases, for their last 15 minutes.
	require.Equal(t, 8, n10)
	require.Equal(t, n10, n1000)
}

// Whatever goes wrong between the server and the recommender, nothing is
// scaled back: the quickstart's two scale-backs on good data become no
// change, with a cause that says why.
func TestPrometheusFaultsNeverShrink(t *testing.T) {
	srv := testenv.StartPrometheus(t, quickstartMetrics)
	if srv == nil {
		return
	}
	good := makePlan(t, newPrometheus(t, srv.URL))
	scaleBacks := map[string]bool{}
	for _, d := range good.Decisions {
		if d.Action == engine.ScaleBack {
			scaleBacks[d.Workload.Ref.String()] = true
		}
	}
	require.Len(t, scaleBacks, 2, "the quickstart scales back two workloads on good data")

	tests := []struct {
		name  string
		fault testenv.Fault
		// timeout is the source's per-request timeout.
		timeout time.Duration
		// same: the plan is the good one (a passing fault was retried).
		same bool
		// cause of the workloads that scale back on good data.
		cause     engine.Cause
		shortfall engine.ShortfallKind
		// upsizes: the upsizes of good data still happen; sameUpsizes:
		// with the same evidence too.
		upsizes, sameUpsizes bool
	}{
		{name: "server down", fault: testenv.Down(), cause: engine.CauseQueryFailed},
		{name: "slower than the timeout", fault: testenv.Slow(3 * time.Second), timeout: 300 * time.Millisecond, cause: engine.CauseQueryFailed},
		{name: "5xx on every try", fault: testenv.Status(http.StatusBadGateway, "bad gateway"), cause: engine.CauseQueryFailed},
		{name: "5xx once is retried", fault: testenv.Status(http.StatusInternalServerError, testenv.ErrorBody("internal", "boom")).Times(1), same: true},
		{name: "429 with Retry-After is retried", fault: testenv.RateLimited(time.Second).Times(2), same: true},
		{name: "truncated body", fault: testenv.Truncate(100), cause: engine.CauseQueryFailed},
		// A server or proxy that answers a series newest first: the
		// samples are put back in time order, and the plan is the same.
		{name: "samples in reverse time order", fault: testenv.ReverseSamples(), same: true},
		// Two values for one instant: neither can be trusted.
		{name: "a sample repeated with another value", fault: testenv.RepeatSample(), cause: engine.CauseDataInvalid, upsizes: true},
		{
			name: "warnings mark the answer partial", fault: testenv.Warnings("store eu-2 is unreachable"),
			cause: engine.CauseDataIncomplete, shortfall: engine.ShortPartial, upsizes: true, sameUpsizes: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			proxy := testenv.NewFaultProxy(t, srv.URL)
			proxy.Set(tt.fault)
			timeout := cmp.Or(tt.timeout, 5*time.Second)
			src := newPrometheus(t, proxy.URL, func(c *prometheus.Config) { c.Timeout = timeout })
			start := time.Now()
			got := makePlan(t, src)
			t.Logf("%d requests in %s", proxy.Requests(), time.Since(start).Round(time.Millisecond))
			if tt.same {
				require.Equal(t, planJSON(t, good), planJSON(t, got))
				return
			}
			for i, d := range got.Decisions {
				ref := d.Workload.Ref.String()
				require.NotEqual(t, engine.ScaleBack, d.Action, ref)
				if scaleBacks[ref] {
					require.Equal(t, engine.NoChange, d.Action, ref)
					require.Equal(t, tt.cause, d.Cause, ref)
					if tt.shortfall != "" {
						require.NotNil(t, d.Evidence.Shortfall, ref)
						require.Equal(t, tt.shortfall, d.Evidence.Shortfall.Kind, ref)
						require.Contains(t, d.Reason(), "store eu-2 is unreachable")
					}
				}
				if good.Decisions[i].Action == engine.Upsize {
					switch {
					case tt.sameUpsizes:
						require.Equal(t, good.Decisions[i].Decision, d.Decision, ref)
					case tt.upsizes:
						require.Equal(t, good.Decisions[i].Recommended, d.Recommended, ref)
						require.Equal(t, good.Decisions[i].Urgent, d.Urgent, ref)
					default:
						require.Equal(t, engine.NoChange, d.Action, ref)
					}
				}
			}
			if tt.cause == engine.CauseQueryFailed {
				require.NotEmpty(t, got.Problems)
				require.Contains(t, got.Problems[0].Message, "prometheus unavailable")
			}
		})
	}
}
