package metrics_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

func TestMatchDeploymentPod(t *testing.T) {
	long := "triton-llama-3-70b-instruct-serving-eu-west-primary-a" // 53 bytes
	name57 := strings.Repeat("d", 57)
	name70 := strings.Repeat("e", 70)
	tests := []struct {
		name       string
		deployment string
		pod        string
		want       bool
		wantShown  int
	}{
		{name: "ten-character hash", deployment: "chat", pod: "chat-7d9f8c6b5d-x2b4z", want: true, wantShown: 10},
		{name: "six-character hash", deployment: "chat", pod: "chat-7d9f8c-x2b4z", want: true, wantShown: 6},
		{name: "too short for a hash: another controller's pod", deployment: "chat", pod: "chat-2-k8s9q", wantShown: 1},
		{name: "five characters is still too short", deployment: "chat", pod: "chat-v2db4-k8s9q", wantShown: 5},
		{name: "another deployment's pod", deployment: "chat", pod: "chat-canary-6d4b9c-x2b4z"},
		{name: "consonant-only name suffix", deployment: "chat", pod: "chat-bcd-5f6d7c-x2b4z"},
		{name: "prefix without dash", deployment: "chat", pod: "chatbot-5f6d7c-x2b4z"},
		{name: "no hash", deployment: "chat", pod: "chat-x2b4z"},
		{name: "eleven-character hash", deployment: "chat", pod: "chat-7d9f8c6b5d7-x2b4z"},
		{name: "vowel in hash", deployment: "chat", pod: "chat-7d9a8c6b5d-x2b4z"},
		{name: "four-character suffix", deployment: "chat", pod: "chat-7d9f8c6b5d-x2b4"},
		{name: "six-character suffix", deployment: "chat", pod: "chat-7d9f8c6b5d-x2b4zz"},
		{name: "upper case suffix", deployment: "chat", pod: "chat-7d9f8c6b5d-X2B4Z"},
		{name: "empty hash", deployment: "chat", pod: "chat--x2b4z"},
		{name: "the deployment's own name", deployment: "chat", pod: "chat"},
		{name: "empty deployment", deployment: "", pod: "-7d9f8c6b5d-x2b4z"},
		{name: "hash cut to four", deployment: long, pod: long + "-7d9fx2b4z", want: true, wantShown: 4},
		{name: "hash cut, wrong deployment", deployment: long[:50], pod: long + "-7d9fx2b4z"},
		{name: "cut name longer than 63", deployment: long, pod: long + "-7d9f8x2b4z"},
		{name: "short name cannot be cut", deployment: "chat", pod: "chat-7d9f" + "x2b4z"},
		{name: "hash exactly fits", deployment: long[:46], pod: long[:46] + "-7d9f8c6b5d-x2b4z", want: true, wantShown: 10},
		{name: "only the dash after the hash cut", deployment: long[:47], pod: long[:47] + "-7d9f8c6b5dx2b4z", want: true, wantShown: 10},
		{name: "57 characters: only the dash is left", deployment: name57, pod: name57 + "-x2b4z", want: true},
		{name: "70 characters: the name itself is cut", deployment: name70, pod: name70[:58] + "x2b4z", want: true},
		{name: "70 characters: a random suffix outside the alphabet", deployment: name70, pod: name70[:58] + "aeiou"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			shown, ok := metrics.MatchDeploymentPod(tt.deployment, tt.pod)
			require.Equal(t, tt.want, ok)
			if ok {
				require.Equal(t, tt.wantShown, shown)
			}
		})
	}
}

func TestMatchStatefulSetPod(t *testing.T) {
	tests := []struct {
		name, sts, pod string
		want           bool
	}{
		{name: "ordinal 0", sts: "chat", pod: "chat-0", want: true},
		{name: "ordinal 12", sts: "chat", pod: "chat-12", want: true},
		{name: "a longer name's pod is not the shorter's", sts: "chat", pod: "chat-2-0"},
		{name: "the longer name's own pod", sts: "chat-2", pod: "chat-2-0", want: true},
		{name: "a shorter name's pod is not the longer's", sts: "chat-2", pod: "chat-2"},
		{name: "leading zero", sts: "chat", pod: "chat-01"},
		{name: "no ordinal", sts: "chat", pod: "chat-"},
		{name: "the StatefulSet's own name", sts: "chat", pod: "chat"},
		{name: "letters", sts: "chat", pod: "chat-x2b4z"},
		{name: "a sign", sts: "chat", pod: "chat-+1"},
		{name: "prefix without dash", sts: "chat", pod: "chatbot-0"},
		{name: "a Deployment's pod", sts: "chat", pod: "chat-7d9f8c6b5d-x2b4z"},
		{name: "empty name", sts: "", pod: "-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, metrics.MatchStatefulSetPod(tt.sts, tt.pod))
		})
	}
}

func TestMatchLWSPod(t *testing.T) {
	tests := []struct {
		name, lws, pod string
		want           bool
	}{
		{name: "leader of group 0", lws: "llm", pod: "llm-0", want: true},
		{name: "leader of group 10", lws: "llm", pod: "llm-10", want: true},
		{name: "worker 1 of group 0", lws: "llm", pod: "llm-0-1", want: true},
		{name: "worker 15 of group 3", lws: "llm", pod: "llm-3-15", want: true},
		{name: "no worker 0: the leader is index 0", lws: "llm", pod: "llm-2-0"},
		{name: "leading zero in the group", lws: "llm", pod: "llm-02"},
		{name: "leading zero in the index", lws: "llm", pod: "llm-2-01"},
		{name: "three numbers: another LeaderWorkerSet's worker", lws: "llm", pod: "llm-2-1-3"},
		{name: "the longer name's worker", lws: "llm-2", pod: "llm-2-1-3", want: true},
		{name: "the longer name's leader", lws: "llm-2", pod: "llm-2-1", want: true},
		{name: "the shorter name's group-2 worker fits too", lws: "llm", pod: "llm-2-1", want: true},
		{name: "the LeaderWorkerSet's own name", lws: "llm", pod: "llm"},
		{name: "trailing dash", lws: "llm", pod: "llm-0-"},
		{name: "letters", lws: "llm", pod: "llm-x2b4z"},
		{name: "prefix without dash", lws: "llm", pod: "llmx-0"},
		{name: "empty name", lws: "", pod: "-0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, metrics.MatchLWSPod(tt.lws, tt.pod))
		})
	}
}

func TestMatchLWSStatefulSet(t *testing.T) {
	tests := []struct {
		name, lws, sts string
		want           bool
	}{
		{name: "the leader StatefulSet", lws: "llm", sts: "llm", want: true},
		{name: "group 0's workers", lws: "llm", sts: "llm-0", want: true},
		{name: "group 12's workers", lws: "llm", sts: "llm-12", want: true},
		{name: "another LeaderWorkerSet's leader StatefulSet fits as group 2's", lws: "llm", sts: "llm-2", want: true},
		{name: "another LeaderWorkerSet's workers", lws: "llm", sts: "llm-2-0"},
		{name: "leading zero", lws: "llm", sts: "llm-01"},
		{name: "letters", lws: "llm", sts: "llm-canary"},
		{name: "prefix without dash", lws: "llm", sts: "llmx"},
		{name: "empty name", lws: "", sts: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, metrics.MatchLWSStatefulSet(tt.lws, tt.sts))
		})
	}
}

func TestClaim(t *testing.T) {
	d := func(name string) usage.Ref { return metricstest.Deployment("ns", name) }
	ro := func(name string) usage.Ref { return metricstest.Rollout("ns", name) }
	sts := func(name string) usage.Ref { return metricstest.StatefulSet("ns", name) }
	lws := func(name string) usage.Ref { return metricstest.LeaderWorkerSet("ns", name) }
	long := "triton-llama-3-70b-instruct-serving-eu-west-primary-a" // 53 bytes
	tests := []struct {
		name       string
		candidates []usage.Ref
		pod        string
		want       usage.Ref // zero: no workload
		wantRivals []usage.Ref
	}{
		{name: "StatefulSets sharing a prefix: the longer's pod", candidates: []usage.Ref{sts("chat"), sts("chat-2")}, pod: "chat-2-0", want: sts("chat-2")},
		{name: "StatefulSets sharing a prefix: the shorter's pod", candidates: []usage.Ref{sts("chat"), sts("chat-2")}, pod: "chat-2", want: sts("chat")},
		{name: "LeaderWorkerSets sharing a prefix: a leader of the longer", candidates: []usage.Ref{lws("llm"), lws("llm-2")}, pod: "llm-2-0", want: lws("llm-2")},
		{name: "LeaderWorkerSets sharing a prefix: a worker of the longer", candidates: []usage.Ref{lws("llm"), lws("llm-2")}, pod: "llm-2-0-1", want: lws("llm-2")},
		{name: "LeaderWorkerSets sharing a prefix: a leader of the shorter", candidates: []usage.Ref{lws("llm"), lws("llm-2")}, pod: "llm-2", want: lws("llm")},
		{
			name: "LeaderWorkerSets sharing a prefix: group 2's worker or group 1's leader", candidates: []usage.Ref{lws("llm"), lws("llm-2")}, pod: "llm-2-1",
			wantRivals: []usage.Ref{lws("llm"), lws("llm-2")},
		},
		{
			name: "a StatefulSet and a LeaderWorkerSet", candidates: []usage.Ref{lws("llm"), sts("llm-2")}, pod: "llm-2-1",
			wantRivals: []usage.Ref{lws("llm"), sts("llm-2")},
		},
		{name: "a StatefulSet's ordinal 0 is no LeaderWorkerSet worker", candidates: []usage.Ref{lws("llm"), sts("llm-2")}, pod: "llm-2-0", want: sts("llm-2")},
		{name: "a Rollout by the Deployment pattern", candidates: []usage.Ref{ro("rank"), d("rank-fast")}, pod: "rank-7d9f8c6b5d-x2b4z", want: ro("rank")},
		{name: "a Deployment sharing the Rollout's prefix", candidates: []usage.Ref{ro("rank"), d("rank-fast")}, pod: "rank-fast-5f6d7b8c9-bcdfg", want: d("rank-fast")},
		{
			name: "a Deployment and a Rollout of one name", candidates: []usage.Ref{d("rank"), ro("rank")}, pod: "rank-7d9f8c6b5d-x2b4z",
			wantRivals: []usage.Ref{d("rank"), ro("rank")},
		},
		{
			name: "a cut name: the longest wins across Deployment and Rollout", candidates: []usage.Ref{d(long), ro(long + "-bcdfghj-canary")}, pod: long + "-bcdfk8s9q",
			want: ro(long + "-bcdfghj-canary"), wantRivals: []usage.Ref{d(long)},
		},
		{name: "digits as the random suffix", candidates: []usage.Ref{d("chat"), sts("chat-7d9f8c6b5d")}, pod: "chat-7d9f8c6b5d-24567", wantRivals: []usage.Ref{d("chat"), sts("chat-7d9f8c6b5d")}},
		{name: "other kinds have no pattern", candidates: []usage.Ref{{Namespace: "ns", Kind: "DaemonSet", Name: "chat"}}, pod: "chat-x2b4z"},
		{name: "no candidate fits", candidates: []usage.Ref{sts("chat"), lws("llm")}, pod: "embed-0"},
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
