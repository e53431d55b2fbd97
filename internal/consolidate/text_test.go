package consolidate_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

func TestWriteText(t *testing.T) {
	tests := []struct {
		name string
		in   consolidate.Placement
		recs map[usage.Ref]engine.Allocation
		want string
	}{
		{
			// hot's upsize to 0.7 no longer fits beside cold on n3: it
			// takes n1's free GPU (a node in use before an empty one),
			// which puts n1 at 85%, above the threshold. n4 is idle; n3's
			// 0.4 then fits n2, the only room, and n2 keeps what it took.
			name: "drainable, kept, idle and resized",
			in: consolidate.Placement{
				Nodes: []consolidate.Node{node("n1", 2, "a"), node("n2", 2, "a"), node("n3", 1, "a"), node("n4", 1, "a")},
				Pods: []consolidate.Pod{
					pod("ns/train-0", "n1", consolidate.Whole(1), 0),
					pod("ns/a-0", "n2", frac(0.5), 0),
					pod("ns/b-0", "n2", frac(0.5), 1),
					pod("ns/hot-0", "n3", frac(0.5), 0),
					pod("ns/cold-0", "n3", frac(0.4), 0),
				},
			},
			recs: map[usage.Ref]engine.Allocation{ref("ns/hot"): {Form: engine.Fraction, GPUs: 0.7}},
			want: `GpuConsolidationPolicy pool-a: 4 nodes, 6 GPUs, candidates used below 75%
GPUs in use now 4; needed now 3, after the open pull requests 4; in use after the drains 4
NODE  GPUS  USED  DRAIN  MOVES OR WHY NOT
n4    1     0.00  yes    idle: nothing to move
n3    1     0.40  yes    ns/cold-0 (0.40) → n2/0
n2    2     1.00  no     it takes the pods drained from n3
moved by their resize: ns/hot-0 (0.70) → n1/1
not modelled: ` + strings.Join(names(consolidate.Unmodelled()), "; ") + "\n",
		},
		{
			name: "a name a terminal would act on is quoted",
			in: consolidate.Placement{
				Nodes: []consolidate.Node{node("n\x1b[2J", 1, "a")},
			},
			want: `GpuConsolidationPolicy pool-a: 1 nodes, 1 GPUs, candidates used below 75%
GPUs in use now 0; needed now 0, after the open pull requests 0; in use after the drains 0
NODE        GPUS  USED  DRAIN  MOVES OR WHY NOT
"n\x1b[2J"  1     0.00  yes    idle: nothing to move
not modelled: ` + strings.Join(names(consolidate.Unmodelled()), "; ") + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			require.NoError(t, consolidate.Evaluate(poolA(), tt.in, tt.recs).WriteText(&b))
			require.Equal(t, tt.want, b.String())
		})
	}
}

func names(cs []consolidate.Constraint) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = string(c)
	}
	return out
}
