package kustomize

import (
	"strconv"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// Reading a build as kustomize holds it. What `kustomize build` writes
// is each object's tree encoded, decoded into Go values, marshalled to
// JSON and written as YAML again (resmap AsYaml): that costs as much as a
// fifth of the build, and parsing the text back as much again. Discovery
// reads the workloads from the trees kustomize holds instead, where that
// reads the same as the rendering would, and renders a root only when
// something needs its text (the proof's expectation, a new patch) or when
// the trees could read otherwise:
//
//   - a tree the round trip would change: a scalar other than a string, a
//     boolean spelled true or false, null spelled null or a whole number
//     in plain decimal (a float may lose digits or become an integer, 0x10
//     becomes 16, ~ becomes null), a key that is not a string, an anchor,
//     an alias or a merge key (JSON resolves them), a key written twice,
//     text that is not UTF-8;
//   - a workload read with an error: its message names a line, and lines
//     are the rendering's;
//   - a DynamoGraphDeployment: its services are read in the order of its
//     keys, which the rendering sorts.
//
// Otherwise the rendering is the tree with its keys sorted, its scalars
// maybe quoted otherwise and on other lines, and what is read from it
// (strings, keys looked up by name, sequences in order) is the same.

// settled reports whether the JSON round trip of kustomize's rendering
// gives back n but for key order, style, comments and positions.
func settled(n *yaml.Node) bool {
	if n == nil || n.Anchor != "" {
		return false
	}
	switch n.Kind {
	case yaml.DocumentNode:
		return len(n.Content) == 1 && settled(n.Content[0])
	case yaml.SequenceNode:
		if n.ShortTag() != "!!seq" {
			return false
		}
		for _, c := range n.Content {
			if !settled(c) {
				return false
			}
		}
		return true
	case yaml.MappingNode:
		return settledMapping(n)
	case yaml.ScalarNode:
		return settledScalar(n)
	}
	return false // an alias
}

// settledMapping is settled for a mapping: string keys, each once.
func settledMapping(n *yaml.Node) bool {
	if n.ShortTag() != "!!map" || len(n.Content)%2 != 0 {
		return false
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" || !settled(k) || !settled(n.Content[i+1]) {
			return false
		}
		// a key written twice: the decoding refuses it, or keeps one
		for j := 0; j < i; j += 2 {
			if n.Content[j].Value == k.Value {
				return false
			}
		}
	}
	return true
}

// settledScalar is settled for a scalar: a string, or a boolean, null or
// whole number as JSON writes it.
func settledScalar(n *yaml.Node) bool {
	if !utf8.ValidString(n.Value) {
		return false
	}
	switch n.ShortTag() {
	case "!!str":
		return true
	case "!!bool":
		return n.Value == "true" || n.Value == "false"
	case "!!null":
		return n.Value == "null"
	case "!!int":
		i, err := strconv.ParseInt(n.Value, 10, 64)
		return err == nil && strconv.FormatInt(i, 10) == n.Value
	}
	return false
}

// held is what discovery reads of a build without rendering it.
type held struct {
	roots       []*yaml.Node
	workloads   []workload.BuiltWorkload
	unsupported []workload.Unsupported
}

// readHeld reads the workloads and unsupported objects of rm, built by
// the kustomization file, from its trees; ok is false when the rendering
// could read otherwise (see above), and the caller renders.
func readHeld(rm resmap.ResMap, file string) (h held, ok bool) {
	rs := rm.Resources()
	h.roots = make([]*yaml.Node, len(rs))
	docs := make([]*yaml.Node, len(rs))
	for i, r := range rs {
		n := r.YNode()
		if n == nil || n.Kind != yaml.MappingNode || !settled(n) {
			return held{}, false
		}
		h.roots[i] = n
		docs[i] = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}
	}
	h.workloads = workload.BuiltWorkloadsOf(h.roots)
	for _, b := range h.workloads {
		if b.Service != "" || b.Workload.GPU.Err != nil || b.Workload.GPU.FractionErr != nil {
			return held{}, false
		}
	}
	h.unsupported = workload.UnsupportedIn(&splice.Stream{Docs: docs}, file, false)
	return h, true
}

// sameHeld reports whether two builds render to the same bytes without
// rendering them: objects whose trees are settled and equal, in order
// (the rendering is a function of the values the trees decode to). false
// says only that the renderings must be compared.
func sameHeld(a, b resmap.ResMap) bool {
	if a == nil || b == nil {
		return false
	}
	ra, rb := a.Resources(), b.Resources()
	if len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		x, y := ra[i].YNode(), rb[i].YNode()
		if !settled(x) || !settled(y) || splice.Compare(x, y, "") != nil {
			return false
		}
	}
	return true
}
