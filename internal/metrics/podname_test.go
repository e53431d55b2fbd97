package metrics_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
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
