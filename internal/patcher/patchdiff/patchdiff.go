// Package patchdiff holds the patches that turn one object into another,
// as the Kustomize editor writes and edits them, over YAML trees: a
// strategic-merge patch (Strategic) and JSON 6902 operations (RFC 6902).
// A strategic-merge patch replaces a list that has no merge key whole: a
// patch that set one argument of a container would pin every other
// argument of the base. Split takes those lists out of a strategic-merge
// patch and says their change as JSON 6902 operations on the items alone,
// each guarded by a test of the value it replaces, so that a base that
// moves or changes that value fails the build instead of being overridden
// in silence. Holds tells which operations of a patch hold the values an
// edit changes, so that the edit can go there. Pure: no files.
package patchdiff

import (
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
)

// Op is one operation of a JSON 6902 patch.
type Op struct {
	// Op is add, remove, replace, move, copy or test.
	Op string
	// Path and From are JSON pointers, decoded into their segments.
	Path, From []string
	// Value is the value of add, replace and test; nil for the others.
	Value *yaml.Node
}

// Pointer writes path as a JSON pointer: "~" as "~0", "/" as "~1".
func Pointer(path []string) string {
	var b strings.Builder
	for _, s := range path {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// ParsePointer reads a JSON pointer into its segments; "" is the whole
// document.
func ParsePointer(p string) []string {
	if p == "" {
		return nil
	}
	var out []string
	for _, s := range strings.Split(strings.TrimPrefix(p, "/"), "/") {
		out = append(out, strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~"))
	}
	return out
}

// Parse reads the operations of a patch from its document root: a
// sequence of mappings, each with op and path. ok is false for anything
// else.
func Parse(root *yaml.Node) (ops []Op, ok bool) {
	if root == nil || root.Kind != yaml.SequenceNode {
		return nil, false
	}
	for _, n := range root.Content {
		if n.Kind != yaml.MappingNode {
			return nil, false
		}
		op := Op{Op: splice.Str(n, "op"), Path: ParsePointer(splice.Str(n, "path"))}
		if k, _ := splice.Field(n, "path"); k == nil || op.Op == "" {
			return nil, false
		}
		if k, _ := splice.Field(n, "from"); k != nil {
			op.From = ParsePointer(splice.Str(n, "from"))
		}
		_, op.Value = splice.Field(n, "value")
		ops = append(ops, op)
	}
	return ops, true
}

// Node writes ops as a YAML sequence, each operation a mapping of op,
// path and value, in that order.
func Node(ops []Op) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, op := range ops {
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{
			str("op"), str(op.Op), str("path"), str(Pointer(op.Path))}}
		if op.From != nil {
			m.Content = append(m.Content, str("from"), str(Pointer(op.From)))
		}
		if op.Value != nil {
			m.Content = append(m.Content, str("value"), splice.Clone(op.Value))
		}
		seq.Content = append(seq.Content, m)
	}
	return seq
}

func str(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }

// NamedItems reports whether every item of sequence s is a mapping with
// a name, as containers are: a strategic merge matches them by name.
func NamedItems(s *yaml.Node) bool {
	for _, it := range s.Content {
		if it.Kind != yaml.MappingNode || splice.Str(it, "name") == "" {
			return false
		}
	}
	return len(s.Content) > 0
}

// Split takes out of diff, the strategic-merge patch that turns mapping
// before into after, every list a strategic merge would replace whole
// (all but lists of named items, which it merges by name), and returns
// the JSON 6902 operations that make the same change to their items only:
//
//   - items changed in a list of the same length: a test of the old item,
//     then a replace, for each;
//   - items appended: a test of the last old item, then an add at each
//     new index;
//   - any other change: a test of the whole old list, then a replace.
//
// Lists of named items are reached by their index in before, guarded by
// a test of the item's name. diff is changed in place: what is left of
// it holds no such list, and a named item left with only its name is
// dropped.
func Split(before, after, diff *yaml.Node) []Op {
	return split(before, after, diff, nil)
}

func split(b, a, d *yaml.Node, at []string) []Op {
	if b == nil || a == nil || d == nil || b.Kind != yaml.MappingNode || a.Kind != yaml.MappingNode || d.Kind != yaml.MappingNode {
		return nil
	}
	var ops []Op
	var keep []*yaml.Node
	for i := 0; i+1 < len(d.Content); i += 2 {
		k, dv := d.Content[i], d.Content[i+1]
		_, bv := splice.Field(b, k.Value)
		_, av := splice.Field(a, k.Value)
		path := append(slices.Clip(at), k.Value)
		switch {
		case bv == nil || av == nil || bv.Kind != av.Kind:
		case bv.Kind == yaml.SequenceNode && NamedItems(bv) && NamedItems(av) && dv.Kind == yaml.SequenceNode:
			ops = append(ops, splitNamed(bv, av, dv, path)...)
			if len(dv.Content) == 0 {
				continue
			}
		case bv.Kind == yaml.SequenceNode:
			ops = append(ops, listOps(bv, av, path)...)
			continue
		case bv.Kind == yaml.MappingNode:
			ops = append(ops, split(bv, av, dv, path)...)
			if len(dv.Content) == 0 {
				continue
			}
		}
		keep = append(keep, k, dv)
	}
	d.Content = keep
	return ops
}

// splitNamed is split for the items of a list of named items: each item
// of the diff d split against the items of b and a of its name, reached
// by its index in b, guarded by a test of that item's name.
func splitNamed(b, a, d *yaml.Node, path []string) []Op {
	var ops []Op
	var items []*yaml.Node
	for _, item := range d.Content {
		name := splice.Str(item, "name")
		bi := slices.IndexFunc(b.Content, func(n *yaml.Node) bool { return splice.Str(n, "name") == name })
		ai := slices.IndexFunc(a.Content, func(n *yaml.Node) bool { return splice.Str(n, "name") == name })
		if bi >= 0 && ai >= 0 {
			in := append(slices.Clip(path), strconv.Itoa(bi))
			if sub := split(b.Content[bi], a.Content[ai], item, in); len(sub) > 0 {
				ops = append(ops, Op{Op: "test", Path: append(slices.Clip(in), "name"), Value: str(name)})
				ops = append(ops, sub...)
			}
		}
		if bi < 0 || ai < 0 || len(item.Content) > 2 {
			items = append(items, item)
		}
	}
	d.Content = items
	return ops
}

// listOps are the operations that turn list b at path into list a.
func listOps(b, a *yaml.Node, path []string) []Op {
	n, m := len(b.Content), len(a.Content)
	at := func(j int) []string { return append(slices.Clip(path), strconv.Itoa(j)) }
	var ops []Op
	switch {
	case n == m:
		for j := range n {
			if splice.Compare(b.Content[j], a.Content[j], "") != nil {
				ops = append(ops, Op{Op: "test", Path: at(j), Value: b.Content[j]}, Op{Op: "replace", Path: at(j), Value: a.Content[j]})
			}
		}
	case n > 0 && m > n && equalItems(b.Content, a.Content[:n]):
		ops = append(ops, Op{Op: "test", Path: at(n - 1), Value: b.Content[n-1]})
		for j := n; j < m; j++ {
			ops = append(ops, Op{Op: "add", Path: at(j), Value: a.Content[j]})
		}
	default:
		ops = append(ops, Op{Op: "test", Path: path, Value: b}, Op{Op: "replace", Path: path, Value: a})
	}
	return ops
}

func equalItems(a, b []*yaml.Node) bool {
	for i := range a {
		if splice.Compare(a[i], b[i], "") != nil {
			return false
		}
	}
	return true
}

// Changed returns the paths where trees a and b differ, as deep as both
// have the same shape: into mappings by key, into lists of the same
// length by index.
func Changed(a, b *yaml.Node) [][]string {
	return changed(a, b, nil)
}

func changed(a, b *yaml.Node, at []string) [][]string {
	switch {
	case a == nil || b == nil:
		if a == b {
			return nil
		}
		return [][]string{at}
	case a.Kind == yaml.MappingNode && b.Kind == yaml.MappingNode:
		var out [][]string
		for i := 0; i+1 < len(a.Content); i += 2 {
			_, bv := splice.Field(b, a.Content[i].Value)
			out = append(out, changed(a.Content[i+1], bv, append(slices.Clip(at), a.Content[i].Value))...)
		}
		for i := 0; i+1 < len(b.Content); i += 2 {
			if k, _ := splice.Field(a, b.Content[i].Value); k == nil {
				out = append(out, append(slices.Clip(at), b.Content[i].Value))
			}
		}
		return out
	case a.Kind == yaml.SequenceNode && b.Kind == yaml.SequenceNode && len(a.Content) == len(b.Content):
		var out [][]string
		for j := range a.Content {
			out = append(out, changed(a.Content[j], b.Content[j], append(slices.Clip(at), strconv.Itoa(j)))...)
		}
		return out
	case splice.Compare(a, b, "") != nil:
		return [][]string{at}
	}
	return nil
}

// Holds tells how the operations of a patch meet the paths an edit
// changes. touched: some operation reaches a changed path, or a parent or
// child of it. held: every changed path is the path of an add or replace
// with a scalar value, the last operation to reach it, and only tests
// reach it before (they test the base); at is those operations' indexes,
// one per changed path, in order. An edit held by a patch is made by
// changing those values.
func Holds(ops []Op, paths [][]string) (at []int, held, touched bool) {
	held = len(paths) > 0
	for _, p := range paths {
		var reach []int
		for i, op := range ops {
			if overlaps(op.Path, p) || (op.From != nil && overlaps(op.From, p)) {
				reach = append(reach, i)
			}
		}
		if len(reach) == 0 {
			held = false
			continue
		}
		touched = true
		last := reach[len(reach)-1]
		v := ops[last]
		ok := (v.Op == "add" || v.Op == "replace") && slices.Equal(v.Path, p) && v.Value != nil && v.Value.Kind == yaml.ScalarNode
		for _, i := range reach[:len(reach)-1] {
			ok = ok && ops[i].Op == "test" && slices.Equal(ops[i].Path, p)
		}
		held = held && ok
		at = append(at, last)
	}
	if !held {
		at = nil
	}
	return at, held, touched
}

// overlaps reports whether one path is the other or leads to it.
func overlaps(a, b []string) bool {
	n := min(len(a), len(b))
	return slices.Equal(a[:n], b[:n])
}

// Lookup returns the node at path below n: mapping keys and list indexes.
func Lookup(n *yaml.Node, path []string) *yaml.Node {
	for _, s := range path {
		switch {
		case n == nil:
			return nil
		case n.Kind == yaml.MappingNode:
			_, n = splice.Field(n, s)
		case n.Kind == yaml.SequenceNode:
			j, err := strconv.Atoi(s)
			if err != nil || j < 0 || j >= len(n.Content) {
				return nil
			}
			n = n.Content[j]
		default:
			return nil
		}
	}
	return n
}

// Strategic returns the strategic-merge patch that turns mapping a into
// b: changed keys, removed keys as null, lists of named items (containers)
// merged by name, other lists whole. ok is false when they are equal.
func Strategic(a, b *yaml.Node) (*yaml.Node, bool) {
	if splice.Compare(a, b, "") == nil {
		return nil, false
	}
	if a.Kind != yaml.MappingNode || b.Kind != yaml.MappingNode {
		return splice.Clone(b), true
	}
	out := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for i := 0; i+1 < len(b.Content); i += 2 {
		k, bv := b.Content[i], b.Content[i+1]
		_, av := splice.Field(a, k.Value)
		switch {
		case av == nil:
			out.Content = append(out.Content, splice.Clone(k), splice.Clone(bv))
		case av.Kind == yaml.SequenceNode && bv.Kind == yaml.SequenceNode && NamedItems(av) && NamedItems(bv):
			if seq := strategicNamed(av, bv); len(seq.Content) > 0 {
				out.Content = append(out.Content, splice.Clone(k), seq)
			}
		default:
			if d, ok := Strategic(av, bv); ok {
				out.Content = append(out.Content, splice.Clone(k), d)
			}
		}
	}
	for i := 0; i+1 < len(a.Content); i += 2 {
		if k, _ := splice.Field(b, a.Content[i].Value); k == nil {
			out.Content = append(out.Content, splice.Clone(a.Content[i]), &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"})
		}
	}
	return out, true
}

// strategicNamed is the strategic merge of list of named items b over a:
// each item of b that is new, whole, and each changed one's difference
// with its name.
func strategicNamed(a, b *yaml.Node) *yaml.Node {
	seq := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, item := range b.Content {
		name := splice.Str(item, "name")
		var old *yaml.Node
		for _, x := range a.Content {
			if splice.Str(x, "name") == name {
				old = x
			}
		}
		if old == nil {
			seq.Content = append(seq.Content, splice.Clone(item))
			continue
		}
		if d, ok := Strategic(old, item); ok {
			_, nv := splice.Field(item, "name")
			d.Content = append([]*yaml.Node{str("name"), splice.Clone(nv)}, d.Content...)
			seq.Content = append(seq.Content, d)
		}
	}
	return seq
}

// Reaches returns the path of the first operation of JSON 6902 patch ops
// (its document root) that reaches one of fields, or a parent or child of
// it; "" when none does.
func Reaches(ops *yaml.Node, fields [][]string) string {
	for _, op := range ops.Content {
		p := splice.Str(op, "path")
		if p == "" {
			continue
		}
		segs := ParsePointer(p)
		for _, f := range fields {
			if overlaps(f, segs) {
				return p
			}
		}
	}
	return ""
}
