package metrics_test

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

func TestMatchISVCPod(t *testing.T) {
	name40 := strings.Repeat("h", 40) // <name40>-predictor-00001- is 57 bytes
	name44 := strings.Repeat("i", 44) // <name44>-predictor- is 55 bytes
	rev63 := strings.Repeat("j", 36) + "-predictor-00001-deployment"
	tests := []struct {
		name, isvc, pod string
		want            bool
	}{
		{name: "RawDeployment", isvc: "chat", pod: "chat-predictor-7d9f8c6b5d-x2b4z", want: true},
		{name: "Serverless", isvc: "chat", pod: "chat-predictor-00001-deployment-7d9f8c6b5d-x2b4z", want: true},
		{name: "Serverless, a generation past 99999", isvc: "chat", pod: "chat-predictor-100000-deployment-7d9f8c6b5d-x2b4z", want: true},
		{name: "a prefix's pod is no longer name's", isvc: "chat", pod: "chat-2-predictor-7d9f8c6b5d-x2b4z"},
		{name: "a longer name's pod is no prefix's", isvc: "chat-2", pod: "chat-predictor-7d9f8c6b5d-x2b4z"},
		{name: "Serverless, four digits", isvc: "chat", pod: "chat-predictor-0001-deployment-7d9f8c6b5d-x2b4z"},
		{name: "Serverless, a padded six-digit generation", isvc: "chat", pod: "chat-predictor-000001-deployment-7d9f8c6b5d-x2b4z"},
		{name: "Serverless, no -deployment", isvc: "chat", pod: "chat-predictor-00001-7d9f8c6b5d-x2b4z"},
		{name: "a transformer's pod", isvc: "chat", pod: "chat-transformer-7d9f8c6b5d-x2b4z"},
		{name: "a multi-node worker's pod", isvc: "chat", pod: "chat-predictor-worker-7d9f8c6b5d-x2b4z"},
		{name: "the Deployment pattern of the name itself", isvc: "chat", pod: "chat-7d9f8c6b5d-x2b4z"},
		{name: "empty name", isvc: "", pod: "-predictor-7d9f8c6b5d-x2b4z"},
		{name: "Serverless, cut in -deployment", isvc: name40, pod: name40 + "-predictor-00001-dx2b4z", want: true},
		{name: "Serverless, cut in the generation", isvc: name44, pod: name44 + "-predictor-000x2b4z", want: true},
		{name: "Serverless, cut at letters", isvc: name44, pod: name44 + "-predictor-0a0x2b4z"},
		{name: "Serverless, a 63-byte Deployment cut", isvc: rev63[:36], pod: rev63[:58] + "x2b4z", want: true},
		{name: "Serverless, a cut name too long", isvc: name40, pod: name40 + "-predictor-00001-dex2b4z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, metrics.MatchISVCPod(tt.isvc, tt.pod))
		})
	}
}

func TestMatchISVCDeploymentAndReplicaSet(t *testing.T) {
	tests := []struct {
		isvc, deployment string
		want             bool
	}{
		{"chat", "chat-predictor", true},
		{"chat", "chat-predictor-00001-deployment", true},
		{"chat", "chat-predictor-123456-deployment", true},
		{"chat", "chat-2-predictor", false},
		{"chat-2", "chat-predictor", false},
		{"chat", "chat-predictor-0001-deployment", false},
		{"chat", "chat-predictor-00001", false},
		{"chat", "chat-predictor-default", false},
		{"chat", "chat-predictor-worker", false},
		{"chat", "chat", false},
		{"", "-predictor", false},
		// Knative cut and hashed the revision's Deployment name
		// (kmeta.ChildName): it shows the revision's first 20
		// characters, then 32 hex digits.
		{"gpu-rightsizing-llama-3-1-70b-instruct-awq", "gpu-rightsizing-llamedad34378e5406393a3df33ea5df81c6-deployment", true},
		{"gpu-rightsizing-llama-3-1-70b-instruct-awq", "gpu-rightsizing-llamedad34378e5406393a3df33ea5df81cX-deployment", false},
		{"gpu-rightsizing-mistral", "gpu-rightsizing-llamedad34378e5406393a3df33ea5df81c6-deployment", false},
	}
	for _, tt := range tests {
		t.Run(tt.isvc+"/"+tt.deployment, func(t *testing.T) {
			require.Equal(t, tt.want, metrics.MatchISVCDeployment(tt.isvc, tt.deployment))
			require.Equal(t, tt.want, metrics.MatchISVCReplicaSet(tt.isvc, tt.deployment+"-7d9f8c6b5d"))
			require.False(t, metrics.MatchISVCReplicaSet(tt.isvc, tt.deployment+"-7d9a8c6b5d"), "a vowel in the hash")
			require.False(t, metrics.MatchISVCReplicaSet(tt.isvc, tt.deployment), "no hash")
		})
	}
}

// TestNamedPredictor: with spec.predictor.name set, KServe names the
// predictor <isvc>-<name>-predictor; its pods are the InferenceService's
// by their names, and a pod of the unnamed pattern is not.
func TestNamedPredictor(t *testing.T) {
	embed := metricstest.InferenceService("ml", "embed")
	rec := new(metricstest.Recording).
		Add(metricstest.UsageOf(metricstest.SM, "ml", "embed-main-predictor-7d9f8c6b5d-x2b4z", "server"), 0, time.Minute, 7).
		Add(metricstest.UsageOf(metricstest.SM, "ml", "embed-main-predictor-00002-deployment-6d4b9c8f7-q7v2n", "server"), 0, time.Minute, 7).
		Add(metricstest.UsageOf(metricstest.SM, "ml", "embed-predictor-7d9f8c6b5d-k8s9q", "server"), 0, time.Minute, 7)
	q := usage.Query{At: metricstest.T0, Lookback: time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: []usage.Ref{embed},
		Components: map[usage.Ref]string{embed: "main"}}
	res, err := rec.Parse(t).Usage(context.Background(), q)
	require.NoError(t, err)
	require.Equal(t, "ml/InferenceService/embed: embed-main-predictor-00002-deployment-6d4b9c8f7-q7v2n embed-main-predictor-7d9f8c6b5d-x2b4z\n",
		metricstest.Pods(withoutMissing(res)))
}

// withoutMissing drops the warnings about metrics a recording lacks.
func withoutMissing(res usage.Result) usage.Result {
	var kept []string
	for _, w := range res.Warnings {
		if !strings.Contains(w, "is not in") {
			kept = append(kept, w)
		}
	}
	res.Warnings = kept
	return res
}

func TestMatchPredictorRevision(t *testing.T) {
	require.True(t, metrics.MatchPredictorRevision("chat-predictor", "chat-predictor-00001"))
	require.False(t, metrics.MatchPredictorRevision("chat-predictor", "chat-predictor-0001"))
	// A service of 58 characters: its revision is cut and hashed too.
	service := strings.Repeat("s", 48) + "-predictor"
	sum := md5.Sum([]byte(service))
	rev := service[:25] + hex.EncodeToString(sum[:]) + "-00003"
	require.True(t, metrics.MatchPredictorRevision(service, rev))
	require.False(t, metrics.MatchPredictorRevision(service, service+"-00003"))
}

func TestClaimInferenceService(t *testing.T) {
	isvc := func(name string) usage.Ref { return metricstest.InferenceService("ns", name) }
	d := func(name string) usage.Ref { return metricstest.Deployment("ns", name) }
	tests := []struct {
		name       string
		candidates []usage.Ref
		pod        string
		want       usage.Ref
		wantRivals []usage.Ref
	}{
		{name: "names sharing a prefix: the shorter's pod", candidates: []usage.Ref{isvc("chat"), isvc("chat-2")}, pod: "chat-predictor-7d9f8c6b5d-x2b4z", want: isvc("chat")},
		{name: "names sharing a prefix: the longer's pod", candidates: []usage.Ref{isvc("chat"), isvc("chat-2")}, pod: "chat-2-predictor-00001-deployment-7d9f8c6b5d-x2b4z", want: isvc("chat-2")},
		{name: "a Deployment sharing the prefix", candidates: []usage.Ref{d("chat-2"), isvc("chat")}, pod: "chat-2-7d9f8c6b5d-x2b4z", want: d("chat-2")},
		{
			name: "a Deployment named as the predictor", candidates: []usage.Ref{d("chat-predictor"), isvc("chat")}, pod: "chat-predictor-7d9f8c6b5d-x2b4z",
			wantRivals: []usage.Ref{d("chat-predictor"), isvc("chat")},
		},
		{
			name: "a Deployment named as a revision's", candidates: []usage.Ref{d("chat-predictor-00001-deployment"), isvc("chat")}, pod: "chat-predictor-00001-deployment-7d9f8c6b5d-x2b4z",
			wantRivals: []usage.Ref{d("chat-predictor-00001-deployment"), isvc("chat")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, ok, rivals := metrics.Claim(tt.candidates, tt.pod)
			require.Equal(t, tt.want, ref)
			require.Equal(t, tt.want != usage.Ref{}, ok)
			require.Equal(t, tt.wantRivals, rivals)
		})
	}
}

func TestAttributionInferenceService(t *testing.T) {
	all, refs := metricstest.InferenceServiceAttribution()
	chat := metricstest.InferenceService("ml", "chat")
	rs := func(pod, owner string) metricstest.OwnedPod {
		return metricstest.OwnedPod{Name: pod, OwnerKind: "ReplicaSet", Owner: owner}
	}
	// A pod kube-state-metrics does not know, next to one whose owners
	// it reports: the Deployment it reports is chat's predictor, no rival.
	unknown := owned("ml", rs("chat-predictor-7d9f8c6b5d-x2b4z", "chat-predictor-7d9f8c6b5d")).
		Add(metricstest.ReplicaSetOwner("ml", "chat-predictor-7d9f8c6b5d", "Deployment", "chat-predictor"), 0, time.Minute, 1).
		Add(metricstest.UsageOf(metricstest.SM, "ml", "chat-predictor-7d9f8c6b5d-k8s9q", "server"), 0, time.Minute, 7).
		Add(metricstest.UsageOf(metricstest.Mem, "ml", "chat-predictor-7d9f8c6b5d-k8s9q", "server"), 0, time.Minute, 7)
	tests := []struct {
		name      string
		rec       *metricstest.Recording
		at        time.Duration
		workloads []usage.Ref
		want      string
	}{
		{name: "both modes, names sharing prefixes, by owner and by name", rec: all, at: 2 * time.Minute, workloads: refs, want: metricstest.InferenceServiceAttributionPods},
		{
			name: "without the InferenceService asked for, its Deployment is a Deployment", rec: all, at: 2 * time.Minute,
			workloads: []usage.Ref{metricstest.Deployment("owners", "embed-predictor")},
			want:      "owners/Deployment/embed-predictor: embed-predictor-5f6d7b8c9-m4n5p\n",
		},
		{
			name: "a Deployment kube-state-metrics reports is no rival of the InferenceService it runs", rec: unknown,
			workloads: []usage.Ref{chat},
			want:      "ml/InferenceService/chat: chat-predictor-7d9f8c6b5d-k8s9q chat-predictor-7d9f8c6b5d-x2b4z\n",
		},
		{
			name: "unless asked for", rec: unknown,
			workloads: []usage.Ref{chat, metricstest.Deployment("ml", "chat-predictor")},
			want: `warning: pod ml/chat-predictor-7d9f8c6b5d-k8s9q counts for no workload: its name fits Deployment chat-predictor, InferenceService chat alike (a Deployment of its predictor's name is either; record kube_deployment_owner (kube-state-metrics v2.18 or later) to tell them apart)
warning: pod ml/chat-predictor-7d9f8c6b5d-x2b4z counts for no workload: its Deployment chat-predictor fits Deployment chat-predictor, InferenceService chat alike (a Deployment of its predictor's name is either; record kube_deployment_owner (kube-state-metrics v2.18 or later) to tell them apart)
`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := usage.Query{At: metricstest.T0.Add(tt.at), Lookback: time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: tt.workloads}
			res, err := tt.rec.Parse(t).Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tt.want, metricstest.Pods(res))
		})
	}
}

// TestClaimDynamo: a Dynamo graph's service runs as a Deployment named as
// its Ref (<graph>-<service>), so its pods are named as that
// Deployment's; a Deployment of the same name, asked for too, is a tie.
func TestClaimDynamo(t *testing.T) {
	dgd := func(name string) usage.Ref {
		return usage.Ref{Namespace: "ns", Kind: "DynamoGraphDeployment", Name: name}
	}
	d := func(name string) usage.Ref { return metricstest.Deployment("ns", name) }
	tests := []struct {
		name       string
		candidates []usage.Ref
		pod        string
		want       usage.Ref
		wantRivals []usage.Ref
	}{
		{name: "a service's pod", candidates: []usage.Ref{dgd("llm-decode"), dgd("llm-prefill")}, pod: "llm-decode-7d9f8c6b5d-x2b4z", want: dgd("llm-decode")},
		{name: "services sharing a prefix", candidates: []usage.Ref{dgd("llm-decode"), dgd("llm-decode-2")}, pod: "llm-decode-2-7d9f8c6b5d-x2b4z", want: dgd("llm-decode-2")},
		{name: "the graph's frontend is not a worker's", candidates: []usage.Ref{dgd("llm-decode")}, pod: "llm-frontend-7d9f8c6b5d-x2b4z"},
		{
			name: "a Deployment of the same name", candidates: []usage.Ref{d("llm-decode"), dgd("llm-decode")}, pod: "llm-decode-7d9f8c6b5d-x2b4z",
			wantRivals: []usage.Ref{d("llm-decode"), dgd("llm-decode")},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ref, ok, rivals := metrics.Claim(tt.candidates, tt.pod)
			require.Equal(t, tt.want, ref)
			require.Equal(t, tt.want != usage.Ref{}, ok)
			require.Equal(t, tt.wantRivals, rivals)
		})
	}
}

// TestAttributionDynamo: through kube-state-metrics, a service's pods
// reach it by its ReplicaSet's Deployment, the one the operator names as
// the service; without owner series, by the Deployment's pod names.
func TestAttributionDynamo(t *testing.T) {
	decode := usage.Ref{Namespace: "ml", Kind: "DynamoGraphDeployment", Name: "llm-decode"}
	prefill := usage.Ref{Namespace: "ml", Kind: "DynamoGraphDeployment", Name: "llm-prefill"}
	rs := func(pod, owner string) metricstest.OwnedPod {
		return metricstest.OwnedPod{Name: pod, OwnerKind: "ReplicaSet", Owner: owner}
	}
	byOwner := owned("ml", rs("llm-decode-7d9f8c6b5d-x2b4z", "llm-decode-7d9f8c6b5d"), rs("llm-prefill-5f6d7b8c9-m4n5p", "llm-prefill-5f6d7b8c9")).
		Add(metricstest.ReplicaSetOwner("ml", "llm-decode-7d9f8c6b5d", "Deployment", "llm-decode"), 0, time.Minute, 1).
		Add(metricstest.ReplicaSetOwner("ml", "llm-prefill-5f6d7b8c9", "Deployment", "llm-prefill"), 0, time.Minute, 1)
	byName := new(metricstest.Recording).
		Add(metricstest.UsageOf(metricstest.SM, "ml", "llm-decode-7d9f8c6b5d-x2b4z", "main"), 0, time.Minute, 3).
		Add(metricstest.UsageOf(metricstest.Mem, "ml", "llm-decode-7d9f8c6b5d-x2b4z", "main"), 0, time.Minute, 3).
		Add(metricstest.UsageOf(metricstest.SM, "ml", "llm-frontend-6c7d8f9b5-q2w3e", "main"), 0, time.Minute, 3).
		Add(metricstest.UsageOf(metricstest.Mem, "ml", "llm-frontend-6c7d8f9b5-q2w3e", "main"), 0, time.Minute, 3)
	for _, tt := range []struct {
		name string
		rec  *metricstest.Recording
		want string
	}{
		{name: "by owner", rec: byOwner, want: "ml/DynamoGraphDeployment/llm-decode: llm-decode-7d9f8c6b5d-x2b4z\nml/DynamoGraphDeployment/llm-prefill: llm-prefill-5f6d7b8c9-m4n5p\n"},
		{name: "by name, the frontend no worker's", rec: byName, want: "ml/DynamoGraphDeployment/llm-decode: llm-decode-7d9f8c6b5d-x2b4z\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := usage.Query{At: metricstest.T0.Add(2 * time.Minute), Lookback: time.Hour, Metrics: metricstest.KubexMetrics(), Workloads: []usage.Ref{decode, prefill}}
			res, err := tt.rec.Parse(t).Usage(context.Background(), q)
			require.NoError(t, err)
			require.Equal(t, tt.want, metricstest.Pods(res))
		})
	}
}
