package plan

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
)

// TestDiscoveryProblemPlace: a discovery problem is told at the place its
// cause names when the cause names one, else at its own file and line.
func TestDiscoveryProblemPlace(t *testing.T) {
	bad := errors.New("bad")
	tests := []struct {
		name string
		pr   patcher.Problem
		want Problem
	}{
		{
			name: "a plain cause",
			pr:   patcher.Problem{File: "apps/a.yaml", Line: 4, Err: bad},
			want: Problem{File: "apps/a.yaml", Line: 4, Message: "bad", Cause: engine.CauseManifestInvalid},
		},
		{
			name: "a cause with its own place",
			pr: patcher.Problem{File: "apps/app.yaml", Line: 1, Err: &located.Error{
				File: "charts/c/values.yaml", Line: 7, Column: 3, Field: "image", Err: bad}},
			want: Problem{File: "charts/c/values.yaml", Line: 7, Column: 3, Field: "image", Message: "bad", Cause: engine.CauseManifestInvalid},
		},
		{
			name: "a cause whose place has no cause of its own",
			pr:   patcher.Problem{File: "apps/app.yaml", Line: 1, Err: &located.Error{File: "charts/c/values.yaml"}},
			want: Problem{File: "apps/app.yaml", Line: 1, Message: "charts/c/values.yaml", Cause: engine.CauseManifestInvalid},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &Plan{}
			p.problem(engine.CauseManifestInvalid, nearest(tt.pr))
			require.Equal(t, []Problem{tt.want}, p.Problems)
		})
	}
}
