package splice

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/located"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// splice replaces t.b[off:end] with text.
type splice struct {
	off, end int
	text     string
}

// Doc is one Op at work on one document. Positions come from root, a
// parse of the current text; meaning goes to exp, the expected tree that the
// result must parse to. Every primitive below does both halves: it records
// byte splices against the current text and applies the same change to exp.
type Doc struct {
	File  string
	Line0 int // lines of the file before t
	t     *text
	sp    spanner
	Root  *yaml.Node // document root of the current parse
	exp   *yaml.Node // document root of the expected tree
	step  int        // indentation step of the file
	// owned, when not nil, holds the nodes of exp that are its own: the
	// rest it shares with the original parse, and expNode copies a node
	// before a step may change it (a held file's, File.open).
	owned map[*yaml.Node]bool

	splices []splice
	// removed are the ranges of the current text that the op means to
	// remove, comments included; every other comment must survive it.
	removed [][2]int
	// changes are the fields changed, by path; the caller says for what.
	changes []Change
}

func (d *Doc) Fail(n *yaml.Node, name string, err error) error {
	line := 0
	if n != nil {
		line = n.Line + d.Line0
	}
	return &located.Error{File: d.File, Line: line, Field: name, Err: err}
}

// Record notes a change. Its values are copied: from is often a piece of
// a held document's strings (thaw), and a change outlives the edit by
// the whole run, which would keep every byte of that document.
func (d *Doc) Record(name, from, to string) {
	d.changes = append(d.changes, Change{Field: strings.Clone(name), Old: strings.Clone(from), New: strings.Clone(to)})
}

// Editable refuses nodes that are aliases, carry anchors or merge keys: an
// edit there would change other places too (or not the place it seems to).
func (d *Doc) Editable(n *yaml.Node, name string) error {
	if n == nil {
		return nil
	}
	switch {
	case n.Kind == yaml.AliasNode:
		return d.Fail(n, name, fmt.Errorf("%w: alias *%s", ErrAlias, n.Value))
	case n.Anchor != "":
		return d.Fail(n, name, fmt.Errorf("%w: anchor &%s", ErrAlias, n.Anchor))
	case n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style == 0 {
				return d.Fail(k, name, fmt.Errorf("%w: merge key <<", ErrAlias))
			}
		}
	}
	return nil
}

// expNode returns the node of the expected tree at the same path as n in
// the current parse.
func (d *Doc) expNode(n *yaml.Node) (*yaml.Node, error) {
	var path []func(*yaml.Node) *yaml.Node
	for c := n; c != d.Root; {
		p, ok := d.sp.pl.lookup(c)
		if !ok || p.parent == nil {
			return nil, fmt.Errorf("%w: node outside the document", ErrVerify)
		}
		switch p.parent.Kind {
		case yaml.MappingNode:
			if p.key == nil {
				return nil, fmt.Errorf("%w: a key is not editable", ErrUnsupported)
			}
			k := p.key.Value
			path = append(path, func(m *yaml.Node) *yaml.Node { _, v := Field(m, k); return v })
		case yaml.SequenceNode:
			i := IndexOf(p.parent.Content, c)
			path = append(path, func(s *yaml.Node) *yaml.Node {
				if s == nil || s.Kind != yaml.SequenceNode || i >= len(s.Content) {
					return nil
				}
				return s.Content[i]
			})
		}
		c = p.parent
	}
	e := d.exp
	for i := len(path) - 1; i >= 0 && e != nil; i-- {
		c := path[i](e)
		if c != nil && d.owned != nil {
			c = d.own(e, IndexOf(e.Content, c))
		}
		e = c
	}
	if e == nil || e.Kind != n.Kind {
		return nil, fmt.Errorf("%w: the expected tree has no node at %s:%d", ErrVerify, d.File, n.Line+d.Line0)
	}
	if d.owned != nil {
		// A step changes the node it gets and its children in place
		// (kyaml's SetField overwrites a value node): all are its own.
		for i := range e.Content {
			d.own(e, i)
		}
	}
	return e, nil
}

// own makes parent.Content[i] a node of the expected tree's own, copied
// from the one it shares with the original parse, and returns it. parent
// must be owned.
func (d *Doc) own(parent *yaml.Node, i int) *yaml.Node {
	n := parent.Content[i]
	if d.owned[n] {
		return n
	}
	c := ownCopy(n)
	parent.Content[i] = c
	d.owned[c] = true
	return c
}

// ownCopy copies n with a Content of its own: its children stay shared.
func ownCopy(n *yaml.Node) *yaml.Node {
	c := new(yaml.Node)
	*c = *n
	c.Content = slices.Clone(n.Content)
	return c
}

func IndexOf(ns []*yaml.Node, n *yaml.Node) int {
	for i, c := range ns {
		if c == n {
			return i
		}
	}
	return -1
}

// SetString sets the string at path below from (a mapping of the current
// parse), creating the mappings on the way when they are missing. name
// names the path for messages and changes. With o.quote, a new value is
// always double-quoted; with o.asString a replaced plain value is quoted
// when YAML would read it as something else than a string. (o.flow is
// ignored: the place of each node says.)
func (d *Doc) SetString(from *yaml.Node, name string, path []string, value string, o ScalarOpts) error {
	cur := from
	leaf := entry{key: path[len(path)-1], value: value, quote: o.Quote, untyped: !o.Quote && !o.AsString}
	for i, p := range path {
		if err := d.Editable(cur, name); err != nil {
			return err
		}
		if cur.Kind != yaml.MappingNode {
			return d.Fail(cur, name, fmt.Errorf("%w: expected a mapping", ErrUnsupported))
		}
		k, v := Field(cur, p)
		if k == nil {
			e := nest(path[i:len(path)-1], leaf)
			if err := d.insertEntry(cur, e, beforeKey(p), name); err != nil {
				return err
			}
			d.Record(name, "", value)
			return nil
		}
		if err := d.Editable(v, name); err != nil {
			return err
		}
		if i == len(path)-1 {
			if v.Kind != yaml.ScalarNode {
				return d.Fail(v, name, fmt.Errorf("%w: expected a scalar", ErrUnsupported))
			}
			old := v.Value
			if v.ShortTag() == "!!null" {
				old = "" // key: ~ has no value
			}
			changed, err := d.ReplaceScalar(v, value, name, o)
			if err != nil || !changed {
				return err
			}
			d.Record(name, old, value)
			return nil
		}
		if v.Kind == yaml.ScalarNode && v.ShortTag() == "!!null" {
			if err := d.fillNull(k, v, nest(path[i+1:len(path)-1], leaf), name); err != nil {
				return err
			}
			d.Record(name, "", value)
			return nil
		}
		cur = v
	}
	return nil
}

// beforeKey says where a created key goes: before the key people write
// after it (Kubernetes writes metadata before spec; KAI's examples put
// schedulerName before containers), else last.
func beforeKey(key string) string {
	switch key {
	case "metadata":
		return "spec"
	case "schedulerName":
		return "containers"
	}
	return ""
}

// ReplaceScalar replaces scalar n with value, keeping its quoting style.
// It reports false when n already holds value.
// Only o.asString counts: a replaced value keeps its own style.
func (d *Doc) ReplaceScalar(n *yaml.Node, value, name string, o ScalarOpts) (bool, error) {
	if err := d.Editable(n, name); err != nil {
		return false, err
	}
	if n.Value == value && (!o.AsString || n.ShortTag() == "!!str") {
		return false, nil
	}
	switch {
	case strings.Contains(n.Value, "{{"):
		return false, d.Fail(n, name, fmt.Errorf("%w: %q", ErrTemplate, n.Value))
	case n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return false, d.Fail(n, name, fmt.Errorf("%w: block scalar", ErrUnsupported))
	case n.Style&yaml.TaggedStyle != 0 && n.ShortTag() != "!!str":
		return false, d.Fail(n, name, fmt.Errorf("%w: explicit tag %s", ErrUnsupported, n.Tag))
	}
	start, end, err := d.sp.span(n)
	if err != nil {
		return false, d.Fail(n, name, err)
	}
	txt, style := renderScalar(value, n.Style, ScalarOpts{AsString: o.AsString, flow: d.sp.pl.at(n).flow})
	if start == end && (start == 0 || !isBlank(d.t.b[start-1])) {
		// an empty value sits right after its colon: `key:` becomes
		// `key: value`, and a comment after it stays
		txt = " " + txt
	}
	d.splices = append(d.splices, splice{off: start, end: end, text: txt})
	e, err := d.expNode(n)
	if err != nil {
		return false, d.Fail(n, name, err)
	}
	e.Value = value
	if n.Style&yaml.TaggedStyle != 0 {
		e.Style = style | yaml.TaggedStyle
	} else {
		e.Style, e.Tag = style, ""
	}
	return true, nil
}

// nodes builds the expected-tree nodes of an inserted entry.
func (e entry) nodes(flow bool) (k, v *yaml.Node) {
	k = &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: e.key}
	if e.children == nil {
		_, style := e.scalar(flow)
		tag := "!!str"
		if e.untyped && style == 0 {
			tag = "" // resolved as YAML reads it
		}
		return k, &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: e.value, Style: style}
	}
	m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	for _, c := range e.children {
		ck, cv := c.nodes(flow)
		m.Content = append(m.Content, ck, cv)
	}
	return k, m
}

// insertEntry adds e to mapping m (block or flow): before the key named
// before when m has it, else at the end.
func (d *Doc) insertEntry(m *yaml.Node, e entry, before, name string) error {
	flow := m.Style&yaml.FlowStyle != 0
	if before == "" && !flow && len(m.Content) >= 2 && d.absorbsNextLine(m.Content[len(m.Content)-1]) {
		// A line after the last value would become part of it: insert
		// before the last key instead.
		before = m.Content[len(m.Content)-2].Value
	}
	var err error
	if flow {
		err = d.insertFlow(m, e.flow(), before)
	} else {
		err = d.insertBlock(m, e, before)
	}
	if err != nil {
		return d.Fail(m, name, err)
	}
	em, err := d.expNode(m)
	if err != nil {
		return d.Fail(m, name, err)
	}
	k, v := e.nodes(flow)
	if bk, _ := Field(em, before); before != "" && bk != nil {
		i := IndexOf(em.Content, bk)
		em.Content = append(em.Content[:i], append([]*yaml.Node{k, v}, em.Content[i:]...)...)
		return nil
	}
	if _, err := yaml.NewRNode(em).Pipe(yaml.SetField(e.key, yaml.NewRNode(v))); err != nil {
		return d.Fail(m, name, err)
	}
	return nil
}

// insertBlock inserts e as new lines into block mapping m.
func (d *Doc) insertBlock(m *yaml.Node, e entry, before string) error {
	if bk, _ := Field(m, before); before != "" && bk != nil {
		ks, err := d.t.nodeOffset(bk)
		if err != nil {
			return err
		}
		indent, ok := d.t.indentOf(ks)
		if !ok {
			return fmt.Errorf("%w: key %q shares its line", ErrUnsupported, before)
		}
		off := d.headCommentStart(ks, indent)
		d.splices = append(d.splices, splice{off: off, end: off, text: e.block(indent, d.step, d.t.eolAt(ks))})
		return nil
	}
	if len(m.Content) == 0 {
		return fmt.Errorf("%w: empty block mapping", ErrUnsupported)
	}
	_, end, err := d.sp.span(m.Content[len(m.Content)-1])
	if err != nil {
		return err
	}
	indent, err := d.keyIndent(m)
	if err != nil {
		return err
	}
	d.insertLines(end, e.block(indent, d.step, d.t.eolAt(end)))
	return nil
}

// absorbsNextLine reports whether a line inserted right after block node n
// would change its value: n ends in a block scalar that keeps its trailing
// line breaks (|+), or one whose last line is the file's last and has no
// line break (the inserted break would become part of the value).
func (d *Doc) absorbsNextLine(n *yaml.Node) bool {
	for (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0 {
		n = n.Content[len(n.Content)-1]
	}
	if n.Kind != yaml.ScalarNode || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
		return false
	}
	start, end, err := d.sp.span(n)
	if err != nil {
		return true
	}
	switch d.chomping(start) {
	case '+':
		return true
	case '-':
		return false
	}
	return d.t.lineEnd(end) == len(d.t.b)
}

// chomping returns the chomping indicator of the block scalar whose header
// starts at start (its | or >): '+' keeps the final line breaks, '-'
// strips them, 0 (clip) keeps one.
func (d *Doc) chomping(start int) byte {
	b := d.t.b
	for i := start + 1; i < len(b) && (b[i] == '+' || b[i] == '-' || b[i] >= '0' && b[i] <= '9'); i++ {
		if b[i] == '+' || b[i] == '-' {
			return b[i]
		}
	}
	return 0
}

// blockScalarBefore reports whether a literal or folded block scalar that
// does not strip its final line break ends right before line start off.
func (d *Doc) blockScalarBefore(off int) bool {
	found := false
	walkPlaces(d.sp.pl.doc, func(n *yaml.Node, _ place) (enter, stop bool) {
		if n.Kind != yaml.ScalarNode || n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
			return true, false
		}
		start, end, err := d.sp.span(n)
		found = err == nil && end <= off && strings.TrimSpace(string(d.t.b[end:off])) == "" && d.chomping(start) != '-'
		return true, found
	}, nil)
	return found
}

// insertLines inserts whole lines after the line holding off. On a last
// line without a line break, the break goes first and none is added at the
// end, so the file still ends without one.
func (d *Doc) insertLines(off int, lines string) {
	at := d.t.nextLine(off)
	if d.t.lineEnd(off) == len(d.t.b) {
		eol := d.t.eol
		lines = eol + strings.TrimSuffix(lines, eol)
	}
	d.splices = append(d.splices, splice{off: at, end: at, text: lines})
}

// keyIndent is the indentation of m's keys, copied from a key that starts
// its line.
func (d *Doc) keyIndent(m *yaml.Node) (string, error) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		ks, err := d.t.nodeOffset(m.Content[i])
		if err != nil {
			return "", err
		}
		if ind, ok := d.t.indentOf(ks); ok {
			return ind, nil
		}
	}
	return strings.Repeat(" ", m.Content[0].Column-1), nil
}

// headCommentStart walks back from the line of ks over the comment lines
// right above it that have the same indentation, so that a line inserted
// before a key does not separate the key from its comment.
func (d *Doc) headCommentStart(ks int, indent string) int {
	start := d.t.lineStart(ks)
	for start > d.t.bom {
		prev := d.t.lineStart(start - 1)
		line := string(d.t.b[prev:d.t.lineEnd(prev)])
		if !strings.HasPrefix(line, indent+"#") {
			break
		}
		start = prev
	}
	return start
}

// fillNull gives a key without a value (`key:` or `key: ~`) the mapping e.
func (d *Doc) fillNull(k, v *yaml.Node, e entry, name string) error {
	start, end, err := d.sp.span(v)
	if err != nil {
		return d.Fail(v, name, err)
	}
	if start == end && !d.sp.pl.at(v).flow {
		ks, err := d.t.nodeOffset(k)
		if err != nil {
			return d.Fail(k, name, err)
		}
		indent := strings.Repeat(" ", k.Column-1+d.step)
		if ind, ok := d.t.indentOf(ks); ok {
			indent = ind + strings.Repeat(" ", d.step)
		}
		d.insertLines(ks, e.block(indent, d.step, d.t.eolAt(ks)))
	} else {
		txt := "{" + e.flow() + "}"
		if start == end {
			txt = " " + txt
		}
		d.splices = append(d.splices, splice{off: start, end: end, text: txt})
	}
	ev, err := d.expNode(v)
	if err != nil {
		return d.Fail(v, name, err)
	}
	ek, evv := e.nodes(start != end)
	*ev = yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{ek, evv}}
	return nil
}

var flowSepRE = regexp.MustCompile(`^[ \t]*,[ \t\r\n]*$`)

// flowSep is the separator used between the items of a flow collection,
// ", " when it has fewer than two.
func (d *Doc) flowSep(c *yaml.Node) string {
	step := 1
	if c.Kind == yaml.MappingNode {
		step = 2
	}
	if len(c.Content) < 2*step {
		return ", "
	}
	_, e, err := d.sp.span(c.Content[step-1])
	if err != nil {
		return ", "
	}
	s, err := d.t.nodeOffset(c.Content[step])
	if err != nil || s < e {
		return ", "
	}
	if sep := string(d.t.b[e:s]); flowSepRE.MatchString(sep) {
		return sep
	}
	return ", "
}

// insertFlow inserts item text into flow collection c, before the key
// named before when c is a mapping that has it, else at the end.
func (d *Doc) insertFlow(c *yaml.Node, item, before string) error {
	b := d.t.b
	cs, ce, err := d.sp.span(c)
	if err != nil {
		return err
	}
	if len(c.Content) == 0 {
		inner := string(b[cs+1 : ce-1])
		if strings.Trim(inner, " \t") != "" {
			return fmt.Errorf("%w: empty flow collection with comments or line breaks", ErrUnsupported)
		}
		if inner != "" {
			item = " " + item + " "
		}
		d.splices = append(d.splices, splice{off: cs + 1, end: ce - 1, text: item})
		return nil
	}
	sep := d.flowSep(c)
	if bk, _ := Field(c, before); before != "" && c.Kind == yaml.MappingNode && bk != nil {
		ks, err := d.sp.entryStart(bk)
		if err != nil {
			return err
		}
		d.splices = append(d.splices, splice{off: ks, end: ks, text: item + sep})
		return nil
	}
	_, le, err := d.sp.span(c.Content[len(c.Content)-1])
	if err != nil {
		return err
	}
	after := d.t.skipSpaceComments(le)
	comma := after < len(b) && b[after] == ','
	end := le
	if comma {
		end = after + 1
	}
	if indent, ok := d.itemsStartLines(c, le); ok && d.t.lineStart(ce-1) > d.t.lineStart(end) {
		// The collection spreads over lines and its closing bracket has a
		// line of its own: the new item gets one too, after the last, in
		// the same style (a trailing comma or none).
		line := indent + item
		if comma {
			line += ","
		} else {
			d.splices = append(d.splices, splice{off: le, end: le, text: ","})
		}
		d.insertLines(end, line+d.t.eolAt(end))
		return nil
	}
	if comma {
		d.splices = append(d.splices, splice{off: after + 1, end: after + 1, text: " " + item})
		return nil
	}
	d.splices = append(d.splices, splice{off: le, end: le, text: sep + item})
	return nil
}

// itemsStartLines reports whether the line holding off starts with an
// item of flow collection c (a key for a mapping), and returns the blanks
// before it.
func (d *Doc) itemsStartLines(c *yaml.Node, off int) (string, bool) {
	ls := d.t.lineStart(off)
	first := d.t.skipBlank(ls)
	step := 1
	if c.Kind == yaml.MappingNode {
		step = 2
	}
	for i := 0; i < len(c.Content); i += step {
		s, err := d.t.nodeOffset(c.Content[i])
		if err == nil && s == first {
			return string(d.t.b[ls:first]), true
		}
	}
	return "", false
}

// DeleteEntry removes the entry k: v from mapping m: whole lines in a block
// mapping, the entry and one comma in a flow mapping.
func (d *Doc) DeleteEntry(m, k, v *yaml.Node, name string) error {
	for _, n := range []*yaml.Node{m, v} {
		if err := d.Editable(n, name); err != nil {
			return err
		}
	}
	b := d.t.b
	ks, err := d.sp.entryStart(k)
	if err != nil {
		return d.Fail(k, name, err)
	}
	_, ve, err := d.sp.span(v)
	if err != nil {
		return d.Fail(v, name, err)
	}
	if ve < ks { // an empty value is positioned right after the colon
		ve = ks
	}
	if m.Style&yaml.FlowStyle != 0 {
		cuts, err := d.flowCuts(m, k, ks, ve)
		if err != nil {
			return d.Fail(k, name, err)
		}
		for _, c := range cuts {
			d.splices = append(d.splices, splice{off: c[0], end: c[1]})
		}
		d.removed = append(d.removed, [2]int{ks, ve})
	} else {
		if _, ok := d.t.indentOf(ks); !ok {
			return d.Fail(k, name, fmt.Errorf("%w: key shares its line with a sequence dash", ErrUnsupported))
		}
		start, end := d.t.lineStart(ks), d.t.nextLine(ve)
		if d.t.lineEnd(ve) == len(b) && start > d.t.bom && !d.blockScalarBefore(start) {
			// last line without a line break: take the break before instead,
			// unless a block scalar above would lose it
			start -= prevBreakLen(b, start)
		}
		d.splices = append(d.splices, splice{off: start, end: end})
		// whole lines go, with the comments on them
		d.removed = append(d.removed, [2]int{start, end})
	}
	em, err := d.expNode(m)
	if err != nil {
		return d.Fail(m, name, err)
	}
	if _, err := yaml.NewRNode(em).Pipe(yaml.Clear(k.Value)); err != nil {
		return d.Fail(m, name, err)
	}
	return nil
}

// flowCuts returns what to delete to remove the entry [ks, ve) of flow
// mapping m: the entry and one comma next to it (the one after it, else
// the one before), never a comment. A line left empty or blank goes; a
// line left ending in blanks loses them.
func (d *Doc) flowCuts(m, k *yaml.Node, ks, ve int) ([][2]int, error) {
	b := d.t.b
	var cuts [][2]int
	// blanks after a comma go when an item follows on the same line, or a
	// comment that would then start where the entry did
	afterComma := func(c int) int {
		n := d.t.skipBlank(c + 1)
		if n < len(b) && breakLen(b, n) == 0 && (b[n] != '#' || d.onlyBlanksBefore(ks)) {
			return n
		}
		return c + 1
	}
	if c := d.t.skipSpaceComments(ve); c < len(b) && b[c] == ',' {
		if d.t.skipBlank(ve) == c {
			cuts = append(cuts, [2]int{ks, afterComma(c)})
		} else {
			cuts = append(cuts, [2]int{ks, ve}, [2]int{c, afterComma(c)})
		}
	} else if i := IndexOf(m.Content, k); i > 0 {
		_, pe, err := d.sp.span(m.Content[i-1])
		if err != nil {
			return nil, err
		}
		c := d.t.skipSpaceComments(pe)
		if c >= ks || b[c] != ',' {
			return nil, fmt.Errorf("%w: no comma before the flow entry", ErrUnsupported)
		}
		if d.t.skipBlank(c+1) == ks {
			start := c
			if d.t.skipBlank(pe) == c {
				start = pe
			}
			cuts = append(cuts, [2]int{start, ve})
		} else {
			cuts = append(cuts, [2]int{c, c + 1}, [2]int{ks, ve})
		}
	} else {
		cuts = append(cuts, [2]int{ks, ve})
	}
	for i, c := range cuts {
		x, y := c[0], c[1]
		ls, le := d.t.lineStart(x), d.t.lineEnd(y)
		if !blankText(b[y:le]) {
			continue
		}
		if blankText(b[ls:x]) && le < len(b) {
			cuts[i] = [2]int{ls, d.t.nextLine(y)} // the line is left blank: it goes
			continue
		}
		for x > ls && isBlank(b[x-1]) {
			x--
		}
		cuts[i] = [2]int{x, le}
	}
	return cuts, nil
}

// onlyBlanksBefore reports whether off is the first non-blank of its line.
func (d *Doc) onlyBlanksBefore(off int) bool {
	return blankText(d.t.b[d.t.lineStart(off):off])
}

func blankText(b []byte) bool {
	for _, c := range b {
		if !isBlank(c) {
			return false
		}
	}
	return true
}

func prevBreakLen(b []byte, at int) int {
	if at >= 2 && b[at-2] == '\r' && b[at-1] == '\n' {
		return 2
	}
	return 1
}

// AppendItem adds a string item at the end of sequence s, in the style of
// its sibling items.
func (d *Doc) AppendItem(s *yaml.Node, value, name string) error {
	if err := d.Editable(s, name); err != nil {
		return err
	}
	if s.Kind != yaml.SequenceNode {
		return d.Fail(s, name, fmt.Errorf("%w: expected a sequence", ErrUnsupported))
	}
	flow := s.Style&yaml.FlowStyle != 0
	txt, style := renderScalar(value, siblingStyle(s), ScalarOpts{AsString: true, flow: flow})
	if flow {
		if err := d.insertFlow(s, txt, ""); err != nil {
			return d.Fail(s, name, err)
		}
	} else {
		last := s.Content[len(s.Content)-1]
		if d.absorbsNextLine(last) {
			return d.Fail(last, name, fmt.Errorf("%w: the last item is a block scalar that would absorb a new line", ErrUnsupported))
		}
		ls, err := d.t.nodeOffset(last)
		if err != nil {
			return d.Fail(last, name, err)
		}
		prefix := string(d.t.b[d.t.lineStart(ls):ls])
		if !dashPrefixRE.MatchString(prefix) {
			return d.Fail(last, name, fmt.Errorf("%w: sequence item shares its line", ErrUnsupported))
		}
		_, end, err := d.sp.span(last)
		if err != nil {
			return d.Fail(last, name, err)
		}
		d.insertLines(end, prefix+txt+d.t.eolAt(end))
	}
	es, err := d.expNode(s)
	if err != nil {
		return d.Fail(s, name, err)
	}
	item := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: value, Style: style}
	if _, err := yaml.NewRNode(es).Pipe(yaml.Append(item)); err != nil {
		return d.Fail(s, name, err)
	}
	return nil
}

// siblingStyle is the quoting of the last flag-like item (starting with
// "-"), else of the last item.
func siblingStyle(s *yaml.Node) yaml.Style {
	for i := len(s.Content) - 1; i >= 0; i-- {
		if it := s.Content[i]; it.Kind == yaml.ScalarNode && strings.HasPrefix(it.Value, "-") {
			return it.Style
		}
	}
	if len(s.Content) > 0 {
		return s.Content[len(s.Content)-1].Style
	}
	return 0
}

var dashPrefixRE = regexp.MustCompile(`^[ \t]*-[ \t]+$`)

// Subst is one replacement inside a string: s[start:end] becomes repl.
// key identifies it, so that the same replacement can be found both in a
// scalar's source text and in its decoded value.
type Subst struct {
	Start, End int
	Key, Repl  string
}

// EditInScalar applies find's replacements inside scalar n: to the bytes of
// its source (keeping quotes, block header and line structure) and to its
// decoded value in the expected tree. Both must yield the same
// replacements, else the edit is refused: this is what makes edits inside
// sh -c strings and | or > blocks exact. It returns the replacements made,
// as found in the value.
func (d *Doc) EditInScalar(n *yaml.Node, name string, find func(string) ([]Subst, error)) ([]Subst, error) {
	if err := d.Editable(n, name); err != nil {
		return nil, err
	}
	start, end, err := d.sp.span(n)
	if err != nil {
		return nil, d.Fail(n, name, err)
	}
	inSrc, err := find(string(d.t.b[start:end]))
	if err != nil {
		return nil, d.Fail(n, name, err)
	}
	inVal, err := find(n.Value)
	if err != nil {
		return nil, d.Fail(n, name, err)
	}
	if len(inSrc) != len(inVal) {
		return nil, d.Fail(n, name, fmt.Errorf("%w: the source and the value of the string do not match", ErrUnsupported))
	}
	for i := range inSrc {
		if inSrc[i].Key != inVal[i].Key {
			return nil, d.Fail(n, name, fmt.Errorf("%w: the source and the value of the string do not match", ErrUnsupported))
		}
	}
	value := n.Value
	for i := len(inVal) - 1; i >= 0; i-- {
		s := inVal[i]
		value = value[:s.Start] + s.Repl + value[s.End:]
		d.splices = append(d.splices, splice{off: start + inSrc[i].Start, end: start + inSrc[i].End, text: inSrc[i].Repl})
	}
	e, err := d.expNode(n)
	if err != nil {
		return nil, d.Fail(n, name, err)
	}
	e.Value = value
	return inVal, nil
}
