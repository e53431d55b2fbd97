package splice

import (
	"fmt"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Mismatch describes the first place where two trees differ.
type Mismatch struct {
	path string
	line int // in the tree that was parsed
	msg  string
}

func (m *Mismatch) Error() string { return m.path + ": " + m.msg }

// Compare reports the first semantic difference between the expected tree
// want and the parsed tree got: kind, resolved tag, value, anchors, mapping
// keys in order and sequence items. Style, comments and positions are
// ignored.
func Compare(want, got *yaml.Node, path string) *Mismatch {
	return compareNodes(want, got, &cmpPath{root: path, steps: make([]cmpStep, 0, 16)}, true)
}

// CompareBuilt is compare for a tool's output, which writes mapping keys
// in an order of its own (kustomize sorts them): keys match by name,
// wherever an edit put them in the expected tree.
func CompareBuilt(want, got *yaml.Node, path string) *Mismatch {
	return compareNodes(want, got, &cmpPath{root: path, steps: make([]cmpStep, 0, 16)}, false)
}

// cmpPath is where compareNodes is in the trees, a stack of steps from
// the root written out only for a mismatch: building every node's path as
// a string cost an allocation or two a node of every document proven.
type cmpPath struct {
	root  string
	steps []cmpStep
}

type cmpStep struct {
	op  byte   // '[' a sequence item, '.' a mapping value, 'k' its key
	key string // op '.'
	idx int    // op '['
}

func (p *cmpPath) String() string {
	s := p.root
	for _, st := range p.steps {
		switch st.op {
		case '[':
			s += "[" + strconv.Itoa(st.idx) + "]"
		case '.':
			if s != "" {
				s += "."
			}
			s += st.key
		case 'k':
			s += " (key)"
		}
	}
	return s
}

// in runs compareNodes one step further down.
func (p *cmpPath) in(st cmpStep, want, got *yaml.Node, ordered bool) *Mismatch {
	p.steps = append(p.steps, st)
	m := compareNodes(want, got, p, ordered)
	p.steps = p.steps[:len(p.steps)-1]
	return m
}

func compareNodes(want, got *yaml.Node, at *cmpPath, ordered bool) *Mismatch {
	if want == nil || got == nil {
		if want == got {
			return nil
		}
		return &Mismatch{path: at.String(), msg: "node missing"}
	}
	line := got.Line
	if want.Kind != got.Kind {
		return &Mismatch{path: at.String(), line: line, msg: fmt.Sprintf("expected %s, got %s", kindName(want.Kind), kindName(got.Kind))}
	}
	if want.Anchor != got.Anchor {
		return &Mismatch{path: at.String(), line: line, msg: fmt.Sprintf("expected anchor %q, got %q", want.Anchor, got.Anchor)}
	}
	switch want.Kind {
	case yaml.ScalarNode:
		if want.ShortTag() != got.ShortTag() {
			return &Mismatch{path: at.String(), line: line, msg: fmt.Sprintf("expected a %s, got a %s", want.ShortTag(), got.ShortTag())}
		}
		if want.Value != got.Value {
			return &Mismatch{path: at.String(), line: line, msg: fmt.Sprintf("expected %q, got %q", want.Value, got.Value)}
		}
	case yaml.AliasNode:
		if want.Value != got.Value {
			return &Mismatch{path: at.String(), line: line, msg: fmt.Sprintf("expected alias *%s, got *%s", want.Value, got.Value)}
		}
	case yaml.DocumentNode, yaml.SequenceNode:
		if want.Kind == yaml.SequenceNode && want.ShortTag() != got.ShortTag() {
			return &Mismatch{path: at.String(), line: line, msg: fmt.Sprintf("expected a %s, got a %s", want.ShortTag(), got.ShortTag())}
		}
		if len(want.Content) != len(got.Content) {
			return &Mismatch{path: at.String(), line: line, msg: fmt.Sprintf("expected %d items, got %d", len(want.Content), len(got.Content))}
		}
		for i := range want.Content {
			var m *Mismatch
			if want.Kind == yaml.SequenceNode {
				m = at.in(cmpStep{op: '[', idx: i}, want.Content[i], got.Content[i], ordered)
			} else {
				m = compareNodes(want.Content[i], got.Content[i], at, ordered)
			}
			if m != nil {
				return m
			}
		}
	case yaml.MappingNode:
		if want.ShortTag() != got.ShortTag() {
			return &Mismatch{path: at.String(), line: line, msg: fmt.Sprintf("expected a %s, got a %s", want.ShortTag(), got.ShortTag())}
		}
		if len(want.Content) != len(got.Content) {
			return &Mismatch{path: at.String(), line: line, msg: fmt.Sprintf("expected %d keys, got %d", len(want.Content)/2, len(got.Content)/2)}
		}
		for i := 0; i+1 < len(want.Content); i += 2 {
			k := want.Content[i].Value
			at.steps = append(at.steps, cmpStep{op: '.', key: k})
			m := compareEntry(want, got, i, at, ordered)
			at.steps = at.steps[:len(at.steps)-1]
			if m != nil {
				return m
			}
		}
	}
	return nil
}

// compareEntry compares the key and value at i of mapping want with
// those of the same key in got: at i when ordered, else wherever got has
// it. at already names the key.
func compareEntry(want, got *yaml.Node, i int, at *cmpPath, ordered bool) *Mismatch {
	j := i
	if !ordered {
		j = -1
		for g := 0; g+1 < len(got.Content); g += 2 {
			if got.Content[g].Value == want.Content[i].Value {
				j = g
				break
			}
		}
		if j < 0 {
			return &Mismatch{path: at.String(), line: got.Line, msg: "expected the key, missing"}
		}
	}
	if m := at.in(cmpStep{op: 'k'}, want.Content[i], got.Content[j], ordered); m != nil {
		return m
	}
	return compareNodes(want.Content[i+1], got.Content[j+1], at, ordered)
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.DocumentNode:
		return "document"
	case yaml.SequenceNode:
		return "sequence"
	case yaml.MappingNode:
		return "mapping"
	case yaml.ScalarNode:
		return "scalar"
	case yaml.AliasNode:
		return "alias"
	}
	return "node"
}

// indentStep is the most common number of columns by which a block
// mapping's keys are indented under their parent key; 2 when the document
// has no nested block mapping.
func indentStep(doc *yaml.Node) int {
	counts := map[int]int{}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 {
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && v.Line > k.Line && v.Column > k.Column {
					counts[v.Column-k.Column]++
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
	best, n := 2, 0
	for step, c := range counts {
		if c > n || c == n && step < best {
			best, n = step, c
		}
	}
	return best
}
