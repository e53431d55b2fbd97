package splice

import (
	"fmt"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// AppendPatch adds `- path: rel` to the kustomization's patches, or a
// patches: list holding it at the end of the kustomization. With target
// (key and value pairs, in order: kind, name...) the entry selects what
// it patches, as a JSON 6902 patch must.
func (d *Doc) AppendPatch(rel string, target ...[2]string) error {
	const name = "patches"
	m := d.Root
	if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 {
		return d.Fail(m, name, fmt.Errorf("%w: not a block mapping", ErrUnsupported))
	}
	item, txt, flowItem, more := patchEntry(rel, target)
	k, s := Field(m, name)
	if k == nil {
		if d.absorbsNextLine(m.Content[len(m.Content)-1]) {
			return d.Fail(m, name, fmt.Errorf("%w: the last value would absorb a new line", ErrUnsupported))
		}
		_, end, err := d.sp.span(m.Content[len(m.Content)-1])
		if err != nil {
			return d.Fail(m, name, err)
		}
		indent, err := d.keyIndent(m)
		if err != nil {
			return d.Fail(m, name, err)
		}
		eol := d.t.eolAt(end)
		dash := indent + d.seqIndent(m)
		d.insertLines(end, indent+name+":"+eol+dash+"- path: "+txt+eol+more(dash+"  ", eol))
		em, err := d.expNode(m)
		if err != nil {
			return d.Fail(m, name, err)
		}
		em.Content = append(em.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: name},
			&yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{item}})
		d.changes = append(d.changes, Change{Field: name, New: "path: " + rel})
		return nil
	}
	if err := d.Editable(s, name); err != nil {
		return err
	}
	if s.Kind != yaml.SequenceNode || len(s.Content) == 0 {
		return d.Fail(s, name, fmt.Errorf("%w: expected a list", ErrUnsupported))
	}
	if s.Style&yaml.FlowStyle != 0 {
		if err := d.insertFlow(s, flowItem, ""); err != nil {
			return d.Fail(s, name, err)
		}
	} else {
		last := s.Content[len(s.Content)-1]
		if d.absorbsNextLine(last) {
			return d.Fail(last, name, fmt.Errorf("%w: the last item would absorb a new line", ErrUnsupported))
		}
		ls, err := d.t.nodeOffset(last)
		if err != nil {
			return d.Fail(last, name, err)
		}
		prefix := string(d.t.b[d.t.lineStart(ls):ls])
		if !dashPrefixRE.MatchString(prefix) {
			return d.Fail(last, name, fmt.Errorf("%w: list item shares its line", ErrUnsupported))
		}
		_, end, err := d.sp.span(last)
		if err != nil {
			return d.Fail(last, name, err)
		}
		eol := d.t.eolAt(end)
		d.insertLines(end, prefix+"path: "+txt+eol+more(strings.Repeat(" ", len(prefix)), eol))
	}
	es, err := d.expNode(s)
	if err != nil {
		return d.Fail(s, name, err)
	}
	es.Content = append(es.Content, item)
	d.changes = append(d.changes, Change{Field: name, New: "path: " + rel})
	return nil
}

// patchEntry is the entry of patches AppendPatch adds: its expected
// tree, its path as written, the whole entry in a flow sequence, and the
// lines of its target below the first, given their indentation.
func patchEntry(rel string, target [][2]string) (item *yaml.Node, txt, flowItem string, more func(indent, eol string) string) {
	str := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	item = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{str("path"), str(rel)}}
	txt, _ = renderScalar(rel, 0, ScalarOpts{AsString: true})
	var flow []string
	sel := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, kv := range target {
		v, _ := renderScalar(kv[1], 0, ScalarOpts{AsString: true})
		flow = append(flow, kv[0]+": "+v)
		sel.Content = append(sel.Content, str(kv[0]), str(kv[1]))
	}
	flowItem = "{path: " + txt + "}"
	if len(target) > 0 {
		item.Content = append(item.Content, str("target"), sel)
		flowItem = "{path: " + txt + ", target: {" + strings.Join(flow, ", ") + "}}"
	}
	more = func(indent, eol string) string {
		if len(target) == 0 {
			return ""
		}
		out := indent + "target:" + eol
		for _, f := range flow {
			out += indent + "  " + f + eol
		}
		return out
	}
	return item, txt, flowItem, more
}

// seqIndent is how far the dash of a block sequence is indented under its
// key in mapping m (kustomizations write both `- x` and `  - x`), copied
// from the first such sequence; none when there is none.
func (d *Doc) seqIndent(m *yaml.Node) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if v.Kind != yaml.SequenceNode || v.Style&yaml.FlowStyle != 0 || len(v.Content) == 0 {
			continue
		}
		off, err := d.t.nodeOffset(v.Content[0])
		if err != nil {
			continue
		}
		prefix := string(d.t.b[d.t.lineStart(off):off])
		if dashPrefixRE.MatchString(prefix) && v.Content[0].Line > k.Line {
			if dash := len(prefix) - len(strings.TrimLeft(prefix, " ")); dash > k.Column-1 {
				return strings.Repeat(" ", dash-(k.Column-1))
			}
			return ""
		}
	}
	return ""
}

// SetPath sets the scalar at path p of the values document to value,
// keeping its style; mappings missing on the way are created (with quote,
// a new value is written as a string). A path through a missing list
// item is refused.
func (d *Doc) SetPath(p []any, value string, quote bool, name string) error {
	cur := d.Root
	for i, e := range p {
		if err := d.Editable(cur, name); err != nil {
			return err
		}
		switch k := e.(type) {
		case string:
			if cur.Kind != yaml.MappingNode {
				return d.Fail(cur, name, fmt.Errorf("%w: expected a mapping", ErrUnsupported))
			}
			kn, v := Field(cur, k)
			if kn == nil || v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" && i < len(p)-1 {
				var keys []string
				for _, r := range p[i:] {
					s, ok := r.(string)
					if !ok {
						return d.Fail(cur, name, fmt.Errorf("%w: the path goes through a list the file does not have", ErrUnsupported))
					}
					keys = append(keys, s)
				}
				return d.SetString(cur, name, keys, value, ScalarOpts{Quote: quote})
			}
			cur = v
		case int:
			if cur.Kind != yaml.SequenceNode || k >= len(cur.Content) {
				return d.Fail(cur, name, fmt.Errorf("%w: expected a list of more than %d items", ErrUnsupported, k))
			}
			cur = cur.Content[k]
		}
	}
	if err := d.Editable(cur, name); err != nil {
		return err
	}
	if cur.Kind != yaml.ScalarNode {
		return d.Fail(cur, name, fmt.Errorf("%w: expected a scalar", ErrUnsupported))
	}
	old := cur.Value
	changed, err := d.ReplaceScalar(cur, value, name, ScalarOpts{})
	if err != nil || !changed {
		return err
	}
	d.Record(name, old, value)
	return nil
}

// ReplaceBlock replaces the text of literal block scalar n with text,
// line by line, indented as its first line is. Tabs and CRs are refused:
// the block would not read back the same.
func (d *Doc) ReplaceBlock(n *yaml.Node, name string, text []byte) error {
	start, end, err := d.sp.span(n)
	if err != nil {
		return d.Fail(n, name, err)
	}
	body := d.t.nextLine(start)
	if body >= end {
		return d.Fail(n, name, fmt.Errorf("%w: empty block", ErrUnsupported))
	}
	first := d.t.skipBlank(body)
	indent := string(d.t.b[body:first])
	if strings.Contains(indent, "\t") || strings.Contains(string(text), "\r") {
		return d.Fail(n, name, fmt.Errorf("%w: tabs or CR in the block", ErrUnsupported))
	}
	lines := strings.Split(strings.TrimRight(string(text), "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = indent + l
		}
	}
	d.splices = append(d.splices, splice{off: body, end: end, text: strings.Join(lines, d.t.eolAt(body))})
	e, err := d.expNode(n)
	if err != nil {
		return d.Fail(n, name, err)
	}
	e.Value = string(text)
	return nil
}
