package backtest_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/backtest"
)

// TestPlotFile: a workload's name from a trace is only ever one plain file
// name, and names that read alike do not share one.
func TestPlotFile(t *testing.T) {
	tests := []struct {
		name  string
		names []string
		want  []string
	}{
		{name: "plain", names: []string{"chat-v2.1_a"}, want: []string{"workload-chat-v2.1_a.svg"}},
		{name: "a path", names: []string{"x/../../../pwned"}, want: []string{"workload-x_.._.._.._pwned.svg"}},
		{name: "dot dot", names: []string{".."}, want: []string{"workload-...svg"}},
		{name: "control characters and non-ASCII", names: []string{"a\nb\x00ü"}, want: []string{"workload-a_b___.svg"}},
		{name: "names that read alike", names: []string{"a/b", "a_b", "a b"}, want: []string{"workload-a_b.svg", "workload-a_b-2.svg", "workload-a_b-3.svg"}},
		{name: "too long", names: []string{strings.Repeat("n", 300)}, want: []string{"workload-" + strings.Repeat("n", 200) + ".svg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			used := map[string]bool{}
			var got []string
			for _, n := range tt.names {
				got = append(got, backtest.PlotFile(n, used))
			}
			require.Equal(t, tt.want, got)
		})
	}
}
