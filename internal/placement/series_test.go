package placement_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/placement"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// at is the evaluation time of testdata/pool.om (written by hand in the
// shape of kube-state-metrics v2.20.0's output, which
// TestKubeStateMetricsMatchesAPIServer reads from the real one for the
// same pool), whose samples are at
// T0, T0+30s and T0+60s: what kube-state-metrics would say of the pool
// fill makes on the API server, a stale node and a stale pod besides.
var at = time.Unix(1700000060, 0)

func recorded(t *testing.T) *openmetrics.Recorded {
	t.Helper()
	rec, err := openmetrics.OpenRecorded("testdata/pool.om")
	require.NoError(t, err)
	return rec
}

// wantPool is the pool of fill, as both sources must read it.
func wantPool() consolidate.Placement {
	a100 := map[string]string{"nodePool": "a", placement.ProductLabel: "NVIDIA-A100-SXM4-80GB"}
	ml := func(kind, name string) usage.Ref { return usage.Ref{Namespace: "ml", Kind: kind, Name: name} }
	return consolidate.Placement{
		Nodes: []consolidate.Node{
			{Name: "gpu-1", Labels: a100, GPUs: 4, Model: "NVIDIA-A100-SXM4-80GB"},
			{Name: "gpu-2", Labels: a100, GPUs: 2, Model: "NVIDIA-A100-SXM4-80GB"},
		},
		Pods: []consolidate.Pod{
			{Namespace: "default", Name: "solo", Workload: usage.Ref{Namespace: "default", Kind: "Pod", Name: "solo"}, Node: "gpu-2", Share: consolidate.Fraction(0.1, 1)},
			{Namespace: "ml", Name: "batch-7c9b-x", Workload: ml("ReplicaSet", "batch-7c9b"), Node: "gpu-2", Share: consolidate.Fraction(0.25, 1)},
			{Namespace: "ml", Name: "db-0", Workload: ml("StatefulSet", "db"), Node: "gpu-1", Share: consolidate.Whole(2)},
			{Namespace: "ml", Name: "llm-6d4f-a", Workload: ml("Deployment", "llm"), Node: "gpu-1", Share: consolidate.Fraction(0.5, 1), Queue: "serving"},
			{Namespace: "ml", Name: "llm-6d4f-b", Workload: ml("Deployment", "llm"), Node: "gpu-2", Share: consolidate.Fraction(0.3, 2), Queue: "serving"},
		},
		Rollouts: []consolidate.Rollout{{Workload: ml("Deployment", "llm"), Replicas: 1, MaxSurge: consolidate.Count(1), MaxUnavailable: consolidate.Count(0)}},
	}
}

func sortPods(p *consolidate.Placement) {
	slices.SortFunc(p.Pods, func(a, b consolidate.Pod) int { return strings.Compare(a.Key(), b.Key()) })
}

// leftOut is the notes about pods left out, which both sources give
// alike.
func leftOut(notes []string) []string {
	var out []string
	for _, n := range notes {
		if strings.HasPrefix(n, "pod ") {
			out = append(out, n)
		}
	}
	return out
}

var wantLeftOut = []string{
	`pod ml/bad left out: invalid gpu-fraction "1.5": KAI wants a fraction strictly between 0 and 1`,
	"pod ml/mem left out: it asks for gpu-memory, which a report does not count yet",
}

func TestFromSeries(t *testing.T) {
	ss := recorded(t).Series()
	tests := []struct {
		name  string
		at    time.Time
		keys  []string
		want  consolidate.Placement
		notes []string
	}{
		{name: "the pool at the end of the recording", at: at, keys: []string{"nodePool"}, want: wantPool(), notes: wantLeftOut},
		{
			// Ten minutes on, every series is older than the lookback:
			// nothing is there any more.
			name: "nothing after the lookback", at: at.Add(10 * time.Minute), keys: []string{"nodePool"},
			want: consolidate.Placement{Rollouts: []consolidate.Rollout{}},
		},
		{
			// 340 s before the end, before the pool's first samples: the
			// pod last seen 330 s before the end is there, and so is the
			// node last seen 460 s before it.
			name: "what was there before", at: at.Add(-340 * time.Second), keys: []string{"nodePool"},
			want: consolidate.Placement{
				Nodes: []consolidate.Node{{Name: "gpu-old", Labels: map[string]string{}, GPUs: 8}},
				Pods: []consolidate.Pod{{Namespace: "ml", Name: "gone", Workload: usage.Ref{Namespace: "ml", Kind: "Pod", Name: "gone"},
					Node: "gpu-1", Share: consolidate.Fraction(0.2, 1)}},
				Rollouts: []consolidate.Rollout{},
			},
		},
		{
			// Without the key "nodePool" asked for, the nodes carry their
			// product label only: a selector on nodePool would match none.
			name: "only the keys asked for", at: at,
			want: func() consolidate.Placement {
				p := wantPool()
				for i := range p.Nodes {
					p.Nodes[i].Labels = map[string]string{placement.ProductLabel: "NVIDIA-A100-SXM4-80GB"}
				}
				return p
			}(),
			notes: wantLeftOut,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := placement.FromSeries(ss, tt.at, tt.keys)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.notes, notes)
		})
	}
}

// TestFromSeriesWithoutAnnotations: a kube-state-metrics that exports no
// pod annotations cannot show fractions; the note says how to allow them.
func TestFromSeriesWithoutAnnotations(t *testing.T) {
	ss := slices.DeleteFunc(recorded(t).Series(), func(s metrics.Series) bool { return s.Metric == "kube_pod_annotations" })
	got, notes := placement.FromSeries(ss, at, []string{"nodePool"})
	require.Len(t, got.Pods, 1, "only db-0's whole GPUs are seen")
	require.Contains(t, notes[len(notes)-1], "--metric-annotations-allowlist=pods=[gpu-fraction,gpu-fraction-num-devices,gpu-memory]")
}

// TestSeriesMatchesAPIServer: the same pool, made on a real API server
// and recorded as kube-state-metrics would export it, reads the same.
// The reader is recorded too: it only ever sends GETs.
func TestSeriesMatchesAPIServer(t *testing.T) {
	s := kubeenv.StartAPIServer(t, kubeenv.User{Name: "reader"})
	if s == nil {
		return
	}
	fill(t, s)
	reader, methods := recordingClient(t, s, "reader")
	fromAPI, apiNotes, err := placement.Read(context.WithoutCancel(t.Context()), reader)
	require.NoError(t, err)
	fromSeries, seriesNotes := placement.FromSeries(recorded(t).Series(), at, []string{"nodePool"})
	sortPods(&fromAPI)
	require.Equal(t, fromAPI, fromSeries)
	require.Equal(t, wantPool(), fromSeries)
	require.Equal(t, leftOut(apiNotes), leftOut(seriesNotes))
	require.Equal(t, []string{http.MethodGet}, methods(), "the reader sent a request other than GET")
}

// TestReadSeriesFromPrometheus: the recording backfilled into a real
// Prometheus reads as the recording does.
func TestReadSeriesFromPrometheus(t *testing.T) {
	srv := testenv.StartPrometheus(t, "testdata/pool.om")
	if srv == nil {
		return
	}
	prom, err := prometheus.New(prometheus.Config{URL: srv.URL, Timeout: 5 * time.Second})
	require.NoError(t, err)
	got, notes, err := placement.ReadSeries(context.WithoutCancel(t.Context()), prom, at, []string{"nodePool"})
	require.NoError(t, err, srv.Log())
	require.Equal(t, wantPool(), got)
	require.Equal(t, wantLeftOut, notes)
}

// recordingClient is a client of s as user that records the HTTP method
// of every request it sends; methods returns them, each once.
func recordingClient(t *testing.T, s *kubeenv.APIServer, user string) (kubernetes.Interface, func() []string) {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig(t, user))
	require.NoError(t, err)
	var mu sync.Mutex
	seen := map[string]bool{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			seen[r.Method] = true
			mu.Unlock()
			return rt.RoundTrip(r)
		})
	})
	kube, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	return kube, func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for m := range seen {
			out = append(out, m)
		}
		slices.Sort(out)
		return out
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestKubeStateMetricsMatchesAPIServer: the pool fill makes, read through
// the real kube-state-metrics (v2.20.0, built from its module) with the
// allowlists docs/fleet.md gives, reads as the API server does: node
// labels under kube-state-metrics' own names (nodePool arrives as
// label_node_pool), fractions from its annotations, queues from its pod
// labels. From one scrape recorded, and from a real Prometheus scraping
// it.
func TestKubeStateMetricsMatchesAPIServer(t *testing.T) {
	s := kubeenv.StartAPIServer(t, kubeenv.User{Name: "reader"})
	if s == nil {
		return
	}
	fill(t, s)
	ksm := kubeenv.StartKubeStateMetrics(t, s, kubeenv.KubeStateMetricsOptions{
		LabelsAllowlist:      "nodes=[*],pods=[kai.scheduler/queue],deployments=[kai.scheduler/queue]",
		AnnotationsAllowlist: "pods=[gpu-fraction,gpu-fraction-num-devices,gpu-memory]",
	})
	if ksm == nil {
		return
	}
	ksm.Sync(t)
	fromAPI, apiNotes, err := placement.Read(context.WithoutCancel(t.Context()), client(t, s, "reader"))
	require.NoError(t, err)
	sortPods(&fromAPI)
	require.Equal(t, wantPool(), fromAPI)

	now := time.Now()
	rec, err := openmetrics.ParseRecorded(bytes.NewReader(ksm.Recording(t, now.Add(-30*time.Second), now)), "ksm.om")
	require.NoError(t, err)
	fromSeries, notes := placement.FromSeries(rec.Series(), now, []string{"nodePool"})
	require.Equal(t, fromAPI, fromSeries, "kube-state-metrics' own output")
	require.Equal(t, leftOut(apiNotes), leftOut(notes))

	srv := testenv.StartScrapingPrometheus(t, ksm.Addr)
	if srv == nil {
		return
	}
	prom, err := prometheus.New(prometheus.Config{URL: srv.URL, Timeout: 5 * time.Second})
	require.NoError(t, err)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, _, err := placement.ReadSeries(context.WithoutCancel(t.Context()), prom, time.Now(), []string{"nodePool"})
		require.NoError(c, err)
		require.Equal(c, fromAPI, got, "a real Prometheus scraping kube-state-metrics")
	}, 30*time.Second, time.Second, srv.Log())
}
