package splice_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
)

// TestAppendPatch: an entry of patches is added in the style of the list
// it joins (block, indented or not, or flow), or in a new list, with its
// target's keys in the order given; the result is proven by the splice's
// own parse.
func TestAppendPatch(t *testing.T) {
	target := [][2]string{{"kind", "Deployment"}, {"name", "chat"}, {"namespace", "prod"}}
	tests := []struct {
		name, in string
		target   [][2]string
		want     string
	}{
		{name: "a new list", in: "resources:\n  - ../base\n",
			want: "resources:\n  - ../base\npatches:\n  - path: p.yaml\n"},
		{name: "a new list, with a target", in: "resources:\n  - ../base\n", target: target,
			want: "resources:\n  - ../base\npatches:\n  - path: p.yaml\n    target:\n      kind: Deployment\n      name: chat\n      namespace: prod\n"},
		{name: "a block list, not indented, with a target", in: "resources:\n- ../base\npatches:\n- path: a.yaml # theirs\n", target: target,
			want: "resources:\n- ../base\npatches:\n- path: a.yaml # theirs\n- path: p.yaml\n  target:\n    kind: Deployment\n    name: chat\n    namespace: prod\n"},
		{name: "a flow list, with a target", in: "resources: [../base]\npatches: [{path: a.yaml}]\n", target: target[:2],
			want: "resources: [../base]\npatches: [{path: a.yaml}, {path: p.yaml, target: {kind: Deployment, name: chat}}]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := splice.NewFile("kustomization.yaml", []byte(tt.in), false)
			require.NoError(t, err)
			_, _, err = f.EditDoc(0, []splice.Step{{Name: "append", Run: func(d *splice.Doc) error { return d.AppendPatch("p.yaml", tt.target...) }}})
			require.NoError(t, err)
			got, ok := f.Result()
			require.True(t, ok)
			require.Equal(t, tt.want, string(got))
		})
	}
}
