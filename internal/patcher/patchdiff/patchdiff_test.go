package patchdiff_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher/patchdiff"
)

func node(t *testing.T, s string) *yaml.Node {
	t.Helper()
	rn, err := yaml.Parse(s)
	require.NoError(t, err)
	return rn.YNode()
}

func text(t *testing.T, n *yaml.Node) string {
	t.Helper()
	s, err := yaml.NewRNode(n).String()
	require.NoError(t, err)
	return s
}

const pod = `spec:
  containers:
  - name: sidecar
    args: [--a]
  - name: vllm
    args: [--model, m, --gpu-memory-utilization, "0.45"]
    resources:
      limits:
        cpu: "2"
`

// TestSplit: of a strategic-merge patch, the lists it would replace whole
// become JSON 6902 operations on their items, each guarded; what is left
// is merged as before.
func TestSplit(t *testing.T) {
	tests := []struct {
		name, after string
		// ops and rest are the JSON 6902 operations and what is left of
		// the strategic-merge patch, as YAML
		ops, rest string
	}{
		{name: "one argument replaced: a test and a replace, the container by its index and name",
			after: strings.Replace(pod, `"0.45"`, `"0.27"`, 1),
			ops: "- op: test\n  path: /spec/containers/1/name\n  value: vllm\n- op: test\n  path: /spec/containers/1/args/3\n  value: \"0.45\"\n" +
				"- op: replace\n  path: /spec/containers/1/args/3\n  value: \"0.27\"\n",
			rest: "{}\n"},
		{name: "an argument appended: the last one tested, the new one added at its index",
			after: strings.Replace(pod, `"0.45"]`, `"0.45", --enforce-eager]`, 1),
			ops: "- op: test\n  path: /spec/containers/1/name\n  value: vllm\n- op: test\n  path: /spec/containers/1/args/3\n  value: \"0.45\"\n" +
				"- op: add\n  path: /spec/containers/1/args/4\n  value: --enforce-eager\n",
			rest: "{}\n"},
		{name: "an argument removed: the whole list, tested",
			after: strings.Replace(pod, `[--model, m, --gpu-memory-utilization, "0.45"]`, `[--model, m]`, 1),
			ops: "- op: test\n  path: /spec/containers/1/name\n  value: vllm\n- op: test\n  path: /spec/containers/1/args\n  value: [--model, m, --gpu-memory-utilization, \"0.45\"]\n" +
				"- op: replace\n  path: /spec/containers/1/args\n  value: [--model, m]\n",
			rest: "{}\n"},
		{name: "a map changed: left to the strategic merge",
			after: strings.Replace(pod, `cpu: "2"`, `cpu: "2"`+"\n        nvidia.com/gpu: \"1\"", 1),
			rest:  "spec:\n  containers:\n  - name: vllm\n    resources:\n      limits:\n        nvidia.com/gpu: \"1\"\n"},
		{name: "both: the argument as operations, the map merged",
			after: strings.Replace(strings.Replace(pod, `"0.45"`, `"0.27"`, 1), `cpu: "2"`, `cpu: "3"`, 1),
			ops: "- op: test\n  path: /spec/containers/1/name\n  value: vllm\n- op: test\n  path: /spec/containers/1/args/3\n  value: \"0.45\"\n" +
				"- op: replace\n  path: /spec/containers/1/args/3\n  value: \"0.27\"\n",
			rest: "spec:\n  containers:\n  - name: vllm\n    resources:\n      limits:\n        cpu: \"3\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, after := node(t, pod), node(t, tt.after)
			diff, ok := patchdiff.Strategic(before, after)
			require.True(t, ok)
			ops := patchdiff.Split(before, after, diff)
			if tt.ops == "" {
				require.Empty(t, ops)
			} else {
				require.Equal(t, tt.ops, text(t, patchdiff.Node(ops)))
			}
			require.Equal(t, tt.rest, text(t, diff))
			back, ok := patchdiff.Parse(patchdiff.Node(ops))
			require.True(t, ok)
			require.Len(t, back, len(ops))
		})
	}
}

// TestHolds: an edit goes to a JSON 6902 patch only when the patch holds
// each changed value as the value of its last add or replace there, with
// only tests before it.
func TestHolds(t *testing.T) {
	ops := func(s string) []patchdiff.Op {
		o, ok := patchdiff.Parse(node(t, s))
		require.True(t, ok)
		return o
	}
	const mine = "- op: test\n  path: /spec/containers/1/name\n  value: vllm\n- op: test\n  path: /spec/containers/1/args/3\n  value: \"0.45\"\n" +
		"- op: replace\n  path: /spec/containers/1/args/3\n  value: \"0.27\"\n"
	args3 := []string{"spec", "containers", "1", "args", "3"}
	tests := []struct {
		name          string
		patch         string
		paths         [][]string
		at            []int
		held, touched bool
	}{
		{name: "its own value", patch: mine, paths: [][]string{args3}, at: []int{2}, held: true, touched: true},
		{name: "another container: not reached", patch: mine, paths: [][]string{{"spec", "containers", "0", "args", "0"}}},
		{name: "the value and a map beside it: reached, not held", patch: mine,
			paths: [][]string{args3, {"spec", "containers", "1", "resources", "limits", "cpu"}}, touched: true},
		{name: "the whole list replaced: reached, not held",
			patch: "- op: replace\n  path: /spec/containers/1/args\n  value: [a, b]\n", paths: [][]string{args3}, touched: true},
		{name: "removed after: not held",
			patch: mine + "- op: remove\n  path: /spec/containers/1/args/3\n", paths: [][]string{args3}, touched: true},
		{name: "an escaped key", patch: "- op: add\n  path: /metadata/annotations/nvidia.com~1gpu\n  value: \"1\"\n",
			paths: [][]string{{"metadata", "annotations", "nvidia.com/gpu"}}, at: []int{0}, held: true, touched: true},
		{name: "nothing changed", patch: mine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			at, held, touched := patchdiff.Holds(ops(tt.patch), tt.paths)
			require.Equal(t, tt.at, at)
			require.Equal(t, tt.held, held)
			require.Equal(t, tt.touched, touched)
		})
	}
}

// FuzzPointer: a pointer read and written again is the same text, and
// its segments survive the round trip.
func FuzzPointer(f *testing.F) {
	for _, s := range []string{"", "/a", "/a~1b/~0c", "/spec/containers/0/args/-", "//x", "/~", "/~2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		segs := patchdiff.ParsePointer(p)
		again := patchdiff.ParsePointer(patchdiff.Pointer(segs))
		require.Equal(t, segs, again)
	})
}
