package plan_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

func tableDecision(name string, d engine.Decision) plan.Decision {
	return plan.Decision{Decision: d, Workload: patcher.Workload{Ref: usage.Ref{Namespace: "ns", Kind: "Deployment", Name: name}}}
}

func fraction(v float64) engine.Allocation { return engine.Allocation{Form: engine.Fraction, GPUs: v} }

// The table for people: urgent upsizes first and marked, every action
// named as the JSON names it, the share added and freed per replica, and
// reasons wrapped to a terminal's width but never when there is none.
func TestWriteTable(t *testing.T) {
	long := strings.Repeat("a reason of many words ", 12)
	p := &plan.Plan{At: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Decisions: []plan.Decision{
		tableDecision("a-down", engine.Decision{Action: engine.ScaleBack, Current: engine.Allocation{Form: engine.WholeGPUs, GPUs: 1}, Recommended: fraction(0.4)}),
		tableDecision("b-up", engine.Decision{Action: engine.Upsize, Current: fraction(0.3), Recommended: fraction(0.5)}),
		tableDecision("c-left", engine.LeftAlone(fraction(0.2), engine.CauseOutOfScope, long)),
		tableDecision("d-urgent", engine.Decision{Action: engine.Upsize, Urgent: true, Current: fraction(0.5), Recommended: fraction(0.75)}),
		tableDecision("e-memory", engine.Decision{Action: engine.Upsize, Current: engine.Allocation{Form: engine.GPUMemory, MiB: 4096}, Recommended: engine.Allocation{Form: engine.GPUMemory, MiB: 8192}}),
	}}
	tests := []struct {
		name  string
		width int
		check func(t *testing.T, out string, lines []string)
	}{
		{name: "no terminal: a row per line", width: 0, check: func(t *testing.T, out string, lines []string) {
			require.Equal(t, "Plan at 2026-12-01T00:00:00Z: 3 upsize (1 urgent), 1 scaleBack, 0 none, 1 skipped", lines[0])
			require.True(t, strings.HasPrefix(lines[3], "ns/Deployment/d-urgent "), "the urgent row comes first: %q", lines[3])
			require.Contains(t, lines[3], "upsize (urgent)")
			require.True(t, strings.HasPrefix(lines[4], "ns/Deployment/a-down "), lines[4])
			require.Contains(t, out, strings.TrimSpace(long))
			require.Contains(t, out, "GPU share per replica if every change merges: 0.45 added (upsize), 0.60 freed (scaleBack), net -0.15; 1 change(s) in gpu-memory not counted\n")
		}},
		{name: "a terminal of 120 columns: reasons wrap under their column", width: 120, check: func(t *testing.T, out string, lines []string) {
			col := strings.Index(lines[2], "REASON")
			var wrapped int
			for _, l := range lines[2:] {
				if strings.HasPrefix(l, "GPU share") {
					break
				}
				require.LessOrEqual(t, len([]rune(l)), 120, "%s", out)
				if strings.TrimSpace(l[:col]) == "" {
					wrapped++
				}
			}
			require.Positive(t, wrapped, "the long reason continues on lines of its own")
			require.NotContains(t, out, strings.TrimSpace(long), "nothing runs past the width")
		}},
		{name: "a narrow terminal still gives reasons 40 columns", width: 20, check: func(t *testing.T, out string, lines []string) {
			col := strings.Index(lines[2], "REASON")
			for _, l := range lines[3:] {
				if strings.HasPrefix(l, "GPU share") {
					break
				}
				require.LessOrEqual(t, len([]rune(l))-col, 40, "%q", l)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, p.WriteTable(&b, tt.width))
			tt.check(t, b.String(), strings.Split(b.String(), "\n"))
		})
	}
}
