package plan_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestTableEscapesInput: names, reasons and problems from a repository
// cannot forge a row or reach the terminal as escape sequences.
func TestTableEscapesInput(t *testing.T) {
	evil := "chat\ninference/Deployment/forged  0.50  0.99  upsize  trust me\x1b[31m"
	p := &plan.Plan{
		Decisions: []plan.Decision{{
			Decision: engine.LeftAlone(engine.Allocation{Form: engine.Fraction, GPUs: 0.5}, engine.CauseOutOfScope, "bidi \u202e and \x9b too"),
			Workload: patcher.Workload{Ref: usage.Ref{Namespace: "inference", Kind: "Deployment", Name: evil}},
		}},
		Problems: []plan.Problem{{File: "apps/a\nb.yaml", Line: 3, Message: "title \x1b]0;pwned\a, bad byte \xff"}},
	}
	var out bytes.Buffer
	require.NoError(t, p.WriteTable(&out, 0))
	s := out.String()
	for _, bad := range []string{"\x1b", "\a", "\u202e", "\x9b", "\u009b", "\xff"} {
		require.NotContains(t, s, bad)
	}
	require.Contains(t, s, `inference/Deployment/chat\ninference/Deployment/forged`)
	require.Contains(t, s, `trust me\x1b[31m`)
	require.Contains(t, s, `bidi \u202e and \x9b too`)
	require.Contains(t, s, `apps/a\nb.yaml:3: title \x1b]0;pwned\a, bad byte \xff`)
	// The header, a blank line, the column titles, one row, a blank line,
	// the problems' heading and one problem: nothing forged a line.
	require.Len(t, strings.Split(strings.TrimSuffix(s, "\n"), "\n"), 7, s)
}
