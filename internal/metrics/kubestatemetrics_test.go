package metrics_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The long InferenceService of TestKubeStateMetricsAttribution, whose
// predictor runs in Knative mode: its revision's Deployment name is past
// 63 characters, so Knative cuts it and puts an MD5 sum of the revision's
// name in (knative/pkg kmeta.ChildName).
const (
	longISVC     = "gpu-rightsizing-llama-3-1-70b-instruct-awq"
	longRevision = longISVC + "-predictor-00001"
)

// knativeDeployment is the Deployment Knative names for longRevision, as
// kmeta.ChildName(longRevision, "-deployment") writes it: the revision cut
// to 63-32-11 characters, the MD5 sum of the whole revision name, then
// the suffix.
func knativeDeployment() string {
	sum := md5.Sum([]byte(longRevision))
	return longRevision[:20] + hex.EncodeToString(sum[:]) + "-deployment"
}

// TestKubeStateMetricsAttribution attributes pods from the real
// kube-state-metrics' own output (v2.20.0, built from its module) about a
// real API server holding what a cluster's controllers would make:
//
//   - chat, a Deployment on half a GPU, two pods running and one evicted;
//     the evicted pod's owner series stays, and only its phase says it
//     runs no more;
//   - llm, a StatefulSet;
//   - embed, an InferenceService whose predictor is named main: its
//     Deployment is embed-main-predictor, owned by the InferenceService;
//   - a long InferenceService in Knative mode: its Deployment's name is
//     cut and hashed, and a Knative Revision owns it;
//   - rank-predictor, a Deployment of its own, named as InferenceService
//     rank's predictor would be: kube_deployment_owner says it has no
//     owner, so it is no rival of rank.
//
// Its pods' usage is Kubex-shaped, a sample every five minutes for a day,
// and the starter policies scale chat back: the evicted pod does not
// count as a running pod without samples.
func TestKubeStateMetricsAttribution(t *testing.T) {
	s := kubeenv.StartAPIServer(t)
	if s == nil {
		return
	}
	const ns = "serving"
	half := kubeenv.PodTemplate{Container: "vllm", Annotations: map[string]string{"gpu-fraction": "0.5"}, SchedulerName: "kai-scheduler"}
	chat := s.CreateWorkload(t, kubeenv.Workload{Kind: "Deployment", Namespace: ns, Name: "chat", Template: half,
		Pods: []kubeenv.PodState{{Node: "gpu-1"}, {Node: "gpu-2"}, {Node: "gpu-1", Phase: kubeenv.PodFailed, Reason: "Evicted"}}})
	llm := s.CreateWorkload(t, kubeenv.Workload{Kind: "StatefulSet", Namespace: ns, Name: "llm", Template: kubeenv.PodTemplate{Container: "vllm", GPUs: 1},
		Pods: []kubeenv.PodState{{Node: "gpu-1"}, {Node: "gpu-2"}}})
	embed := s.CreateWorkload(t, kubeenv.Workload{Kind: "Deployment", Namespace: ns, Name: "embed-main-predictor", Template: half,
		Owner: &kubeenv.ObjectRef{APIVersion: "serving.kserve.io/v1beta1", Kind: "InferenceService", Name: "embed", UID: "7c1f6b2e-0d4a-4e55-9a51-2f0c8e6d1a01"},
		Pods:  []kubeenv.PodState{{Node: "gpu-2"}}})
	long := s.CreateWorkload(t, kubeenv.Workload{Kind: "Deployment", Namespace: ns, Name: knativeDeployment(), Template: half,
		Owner: &kubeenv.ObjectRef{APIVersion: "serving.knative.dev/v1", Kind: "Revision", Name: longRevision, UID: "3b9e2c44-5f1a-4c8d-8e7b-6a2d9f0c4b12"},
		Pods:  []kubeenv.PodState{{Node: "gpu-1"}}})
	rank := s.CreateWorkload(t, kubeenv.Workload{Kind: "Deployment", Namespace: ns, Name: "rank-predictor", Template: half,
		Pods: []kubeenv.PodState{{Node: "gpu-2"}}})

	ksm := kubeenv.StartKubeStateMetrics(t, s, kubeenv.KubeStateMetricsOptions{
		LabelsAllowlist:      "pods=[kai.scheduler/queue],deployments=[kai.scheduler/queue]",
		AnnotationsAllowlist: "pods=[gpu-fraction,gpu-fraction-num-devices,gpu-memory]",
	})
	if ksm == nil {
		return
	}
	ksm.Sync(t)

	// A day of scrapes, from now on: the pods started now, so they are a
	// day old at its end.
	const step = 5 * time.Minute
	start := time.Now().Truncate(time.Second)
	var times []time.Time
	for i := 0; i <= 24*12+12; i++ {
		times = append(times, start.Add(time.Duration(i)*step))
	}
	at := times[len(times)-1]
	var rec bytes.Buffer
	rec.Write(bytes.TrimSuffix(ksm.Recording(t, times...), []byte("# EOF\n")))
	usageOf := func(pod kubeenv.ObjectRef, node string, sm, mem float64) {
		c := metricstest.KubexContainer{Node: node, Namespace: ns, Pod: pod.Name, Container: "vllm", KAI: true}
		for _, x := range []struct {
			metric string
			v      float64
		}{{metricstest.SM, sm}, {metricstest.KubexMemory, mem}} {
			series := metricstest.KubexSeries(x.metric, c, 0)
			for _, ti := range times {
				fmt.Fprintf(&rec, "%s %g %d\n", series, x.v, ti.Unix())
			}
		}
	}
	usageOf(chat.Pods[0], "gpu-1", 10, 30)
	usageOf(chat.Pods[1], "gpu-2", 12, 32)
	usageOf(llm.Pods[0], "gpu-1", 40, 50)
	usageOf(llm.Pods[1], "gpu-2", 40, 50)
	usageOf(embed.Pods[0], "gpu-2", 20, 40)
	usageOf(long.Pods[0], "gpu-1", 20, 40)
	usageOf(rank.Pods[0], "gpu-2", 20, 40)
	rec.WriteString("# EOF\n")
	recorded, err := openmetrics.ParseRecorded(bytes.NewReader(rec.Bytes()), "ksm.om")
	require.NoError(t, err)

	isvc := func(name string) usage.Ref { return usage.Ref{Namespace: ns, Kind: "InferenceService", Name: name} }
	q := usage.Query{At: at, Lookback: 7*24*time.Hour + 15*time.Minute,
		Metrics: map[usage.Metric]usage.Mapping{
			usage.Compute: {Metric: metricstest.SM, NamespaceLabel: "namespace", PodLabel: "pod", ContainerLabel: "container", DeviceLabel: "gpu_uuid"},
			usage.Memory:  {Metric: metricstest.KubexMemory, NamespaceLabel: "namespace", PodLabel: "pod", ContainerLabel: "container", DeviceLabel: "gpu_uuid"},
		},
		Workloads: []usage.Ref{metricstest.Deployment(ns, "chat"), metricstest.StatefulSet(ns, "llm"), isvc("embed"), isvc(longISVC),
			isvc("rank"), metricstest.Deployment(ns, "rank-predictor")},
		Components: map[usage.Ref]string{isvc("embed"): "main"},
	}
	res, err := recorded.Usage(context.Background(), q)
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf(`serving/Deployment/chat: %s %s
serving/Deployment/rank-predictor: %s
serving/InferenceService/embed: %s
serving/InferenceService/%s: %s
serving/StatefulSet/llm: llm-0 llm-1
`, chat.Pods[0].Name, chat.Pods[1].Name, rank.Pods[0].Name, embed.Pods[0].Name, longISVC, long.Pods[0].Name), metricstest.Pods(res))
	for _, p := range res.Workloads[metricstest.Deployment(ns, "chat")].Pods {
		require.True(t, p.Live, p.Name)
		require.Equal(t, 0.5, p.Allocation, "from kube_pod_annotations")
	}

	t.Run("from a real Prometheus", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "ksm.om")
		require.NoError(t, os.WriteFile(path, rec.Bytes(), 0o644))
		srv := testenv.StartPrometheus(t, path)
		if srv == nil {
			return
		}
		prom, err := prometheus.New(prometheus.Config{URL: srv.URL, Timeout: 30 * time.Second})
		require.NoError(t, err)
		got, err := prom.Usage(context.Background(), q)
		require.NoError(t, err, srv.Log())
		require.Equal(t, metricstest.Pods(res), metricstest.Pods(got))
	})

	set, err := policy.Load(context.Background(), filepath.Dir(starterPolicies))
	require.NoError(t, err)
	g := set.Govern(policy.Target{Ref: metricstest.Deployment(ns, "chat"), Labels: map[string]string{"nvidia.com/gpu.present": "true"}})
	require.Empty(t, g.Skip)
	d := engine.Decide(engine.Input{At: at, Current: engine.Allocation{Form: engine.Fraction, GPUs: 0.5}, Rules: g.Rules,
		Usage: res.Workloads[metricstest.Deployment(ns, "chat")]})
	require.Equal(t, engine.ScaleBack, d.Action, "an evicted pod blocks no scale-back: %s", d.Reason())
}

// starterPolicies is the quickstart's policy file, in the shape of the
// Kubex guide's starter example.
const starterPolicies = "../../examples/quickstart/policies/kai-gpu-sharing.yaml"
