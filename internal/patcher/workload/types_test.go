package workload_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestProblemAndNoteAreLocated: a Problem and a Note read as the
// located.Error at their place, which errors.As finds; errors.Is still
// finds the cause.
func TestProblemAndNoteAreLocated(t *testing.T) {
	ref := usage.Ref{Kind: "Deployment", Namespace: "inference", Name: "chat"}
	tests := []struct {
		name  string
		err   error
		want  string
		place located.Error
		cause error
	}{
		{
			name:  "a document of a file",
			err:   workload.Problem{File: "apps/chat.yaml", Line: 12, Err: workload.ErrInvalidName},
			want:  "apps/chat.yaml:12: not a valid Kubernetes name",
			place: located.Error{File: "apps/chat.yaml", Line: 12},
			cause: workload.ErrInvalidName,
		},
		{
			name:  "a whole file",
			err:   workload.Problem{File: "apps/chat.yaml", Err: workload.ErrInvalidName},
			want:  "apps/chat.yaml: not a valid Kubernetes name",
			place: located.Error{File: "apps/chat.yaml"},
			cause: workload.ErrInvalidName,
		},
		{
			name: "a note",
			err: workload.Note{Workload: ref, File: "apps/chat.yaml", Line: 30,
				Field: "spec.template.spec.containers[vllm].args", Err: workload.ErrKVCacheBytes},
			want:  "apps/chat.yaml:30: spec.template.spec.containers[vllm].args: --kv-cache-memory-bytes is set, so vLLM ignores --gpu-memory-utilization",
			place: located.Error{File: "apps/chat.yaml", Line: 30, Field: "spec.template.spec.containers[vllm].args"},
			cause: workload.ErrKVCacheBytes,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, tt.err.Error())
			var le *located.Error
			require.ErrorAs(t, tt.err, &le)
			got := *le
			got.Err = nil
			require.Equal(t, tt.place, got)
			require.ErrorIs(t, tt.err, tt.cause)
		})
	}
}
