package prometheus_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// attributionCase is a query of some workloads and the pods a source must
// count for each.
type attributionCase struct {
	name      string
	workloads []usage.Ref
	want      string
}

// attributesAsRecording backfills rec into a real Prometheus and requires
// the server to count, for each case, the pods the case names, and to
// answer exactly as the recording itself does — usage, and the pods that
// count for no workload, by workload.
func attributesAsRecording(t *testing.T, rec *metricstest.Recording, cases []attributionCase) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "attribution.om")
	require.NoError(t, os.WriteFile(path, []byte(rec.String()), 0o644))
	srv := testenv.StartPrometheus(t, path)
	if srv == nil {
		return
	}
	prom := newPrometheus(t, srv.URL)
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			q := usage.Query{At: metricstest.T0.Add(2 * time.Minute), Lookback: time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: tt.workloads}
			got, err := prom.Usage(context.Background(), q)
			require.NoError(t, err, srv.Log())
			require.Equal(t, tt.want, metricstest.Pods(got))
			want, err := rec.Parse(t).Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, metricstest.Render(want), metricstest.Render(got))
			require.Equal(t, want.Unattributed, got.Unattributed, "the pods that count for no workload, by workload")
		})
	}
}

// The server attributes pods as the recording backfilled into it does:
// StatefulSets, a Rollout and LeaderWorkerSets whose names share prefixes,
// by kube-state-metrics' owners in one namespace and by pod names in the
// other, and counts a pod whose owner nothing tells for none, saying so
// for each workload it may belong to.
func TestPrometheusAttributesAsRecording(t *testing.T) {
	rec, refs := metricstest.Attribution()
	attributesAsRecording(t, rec, []attributionCase{
		{name: "every workload at once", workloads: refs, want: metricstest.AttributionPods},
		{
			name:      "the shorter names alone keep to their own pods",
			workloads: []usage.Ref{metricstest.StatefulSet("owners", "chat"), metricstest.LeaderWorkerSet("owners", "llm"), metricstest.Rollout("owners", "rank")},
			want: `owners/LeaderWorkerSet/llm: llm-0 llm-0-1 llm-1 llm-1-1
owners/Rollout/rank: rank-7d9f8c6b5d-k8s9q rank-7d9f8c6b5d-x2b4z
owners/StatefulSet/chat: chat-0 chat-1 chat-2
`,
		},
	})
}

// The server attributes InferenceServices' predictor pods as the recording
// does, in RawDeployment and Serverless mode, next to a Deployment and an
// InferenceService sharing their prefix, and counts a pod a Deployment
// named as a predictor could be for none.
func TestPrometheusAttributesInferenceServicesAsRecording(t *testing.T) {
	rec, refs := metricstest.InferenceServiceAttribution()
	attributesAsRecording(t, rec, []attributionCase{
		{name: "every workload at once", workloads: refs, want: metricstest.InferenceServiceAttributionPods},
		{
			name:      "chat alone keeps to its own pods",
			workloads: []usage.Ref{metricstest.InferenceService("owners", "chat"), metricstest.InferenceService("names", "chat")},
			want: `names/InferenceService/chat: chat-predictor-7d9f8c6b5d-k8s9q chat-predictor-7d9f8c6b5d-x2b4z
owners/InferenceService/chat: chat-predictor-7d9f8c6b5d-k8s9q chat-predictor-7d9f8c6b5d-x2b4z
`,
		},
	})
}
