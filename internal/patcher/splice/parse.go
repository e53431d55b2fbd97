package splice

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
)

// Stream is one parsed text (a file, or a run of its documents): the text
// and every document, with positions relative to the text.
type Stream struct {
	t    *text
	Docs []*yaml.Node // DocumentNodes
	pl   []*placer
}

// placer returns the placer of s.Docs[i], made once: a step and the
// comment scan around it both ask it.
func (s *Stream) placer(i int) *placer {
	if s.pl == nil {
		s.pl = make([]*placer, len(s.Docs))
	}
	if s.pl[i] == nil {
		s.pl[i] = newPlacer(s.Docs[i])
	}
	return s.pl[i]
}

// comments returns the comments of the stream's text (text.comments).
func (s *Stream) comments() ([]comment, error) {
	return s.t.comments(s.Docs, s.placer)
}

// lineErr is an error that knows its line, so messages can say file:line.
type lineErr struct {
	line int
	err  error
}

func (e *lineErr) Error() string { return e.err.Error() }
func (e *lineErr) Unwrap() error { return e.err }

// LineOf is the line an error of parseStream is about, 0 when unknown.
func LineOf(err error) int {
	var le *lineErr
	if errors.As(err, &le) {
		return le.line
	}
	return 0
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// Parse decodes every document of b. Errors carry the line they are
// about when the parser says it.
func Parse(b []byte) (*Stream, error) {
	t := newText(b)
	if l := conflictMarkerLine(b); l > 0 {
		return nil, &lineErr{line: l, err: ErrConflictMarkers}
	}
	s := &Stream{t: t}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			// Readers of the tree follow aliases: bound what they expand
			// to before anyone meets them.
			if err := checkout.CheckAliases(s.Docs...); err != nil {
				line := 0
				if ae := (*checkout.AliasError)(nil); errors.As(err, &ae) {
					line = ae.Line
				}
				return nil, &lineErr{line: line, err: fmt.Errorf("%w: %w", ErrInvalidYAML, err)}
			}
			return s, nil
		}
		if err != nil {
			line := 0
			msg := err.Error()
			if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
				line, _ = strconv.Atoi(m[1])
				msg = "yaml: " + msg[len(m[0]):]
			}
			return nil, &lineErr{line: line, err: fmt.Errorf("%w: %s", ErrInvalidYAML, msg)}
		}
		s.Docs = append(s.Docs, &n)
	}
}

// conflictMarkerLine returns the 1-based line of the first git merge-conflict
// marker (<<<<<<<, >>>>>>> or ||||||| at the start of a line), 0 if none.
func conflictMarkerLine(b []byte) int {
	line := 1
	for i := 0; i < len(b); {
		rest := b[i:]
		if bytes.HasPrefix(rest, []byte("<<<<<<<")) || bytes.HasPrefix(rest, []byte(">>>>>>>")) ||
			bytes.HasPrefix(rest, []byte("|||||||")) {
			return line
		}
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			return 0
		}
		i += j + 1
		line++
	}
	return 0
}

// place is where a node sits: what holds it and in which context.
type place struct {
	parent *yaml.Node // mapping or sequence holding the node; nil for a document root
	key    *yaml.Node // the key when the node is a mapping value
	flow   bool       // inside a flow collection
	// indent is the indentation of the block structure that holds the
	// node: a key's column-1 for a mapping value, the dash column-1 for a
	// block sequence item; -1 at the top.
	indent int
}

// places indexes every node of doc below the document node. A node met
// twice keeps the place where it was met first.
func places(doc *yaml.Node) map[*yaml.Node]place {
	// Sized for every node at once: grown as it fills, the map was the
	// largest allocation of a plan after the parses.
	m := make(map[*yaml.Node]place, countNodes(doc)-1)
	walkPlaces(doc, func(n *yaml.Node, p place) (enter, stop bool) {
		if _, seen := m[n]; seen {
			return false, false
		}
		m[n] = p
		return true, false
	}, nil)
	return m
}

// walkPlaces calls visit with each node below doc and its place, in
// document order, a node before the nodes it holds. It goes into a node
// when visit says enter, and stops when visit says stop; then, when
// stopped is not nil, it calls it with the node that stopped it and with
// each node above that one, from the bottom up.
func walkPlaces(doc *yaml.Node, visit func(n *yaml.Node, p place) (enter, stop bool), stopped func(n *yaml.Node, p place)) {
	var walk func(n *yaml.Node, p place) bool
	walk = func(n *yaml.Node, p place) (stop bool) {
		defer func() {
			if stop && stopped != nil {
				stopped(n, p)
			}
		}()
		enter, stop := visit(n, p)
		if stop || !enter {
			return stop
		}
		flow := p.flow || n.Style&yaml.FlowStyle != 0
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				ind := p.indent
				if !flow {
					ind = k.Column - 1
				}
				if walk(k, place{parent: n, flow: flow, indent: ind}) || walk(v, place{parent: n, key: k, flow: flow, indent: ind}) {
					return true
				}
			}
		case yaml.SequenceNode:
			ind := p.indent
			if !flow {
				ind = n.Column - 1
			}
			for _, c := range n.Content {
				if walk(c, place{parent: n, flow: flow, indent: ind}) {
					return true
				}
			}
		}
		return false
	}
	for _, c := range doc.Content {
		if walk(c, place{indent: -1}) {
			return
		}
	}
}

// placer answers places(doc)[n] without indexing every node: an edit
// asks about a few nodes and the nodes above them, and an index of every
// node, made twice for each edited document, was a tenth of what a plan
// allocated. Each question walks the document to its node, in places'
// order, and keeps the places of the nodes on the way. A node met twice
// (a tree the copy-on-write shares) keeps where it was met first, as in
// places. Unlike places, the walk goes into a node met before: no tree
// here holds itself, and none shares so much that this costs. Past
// placerWalks walks it indexes every node, so that a document asked
// about many nodes (its block scalars) costs one index, not a walk each.
type placer struct {
	doc   *yaml.Node
	known map[*yaml.Node]place
	walks int
	whole bool // known is places(doc)
}

const placerWalks = 16

func newPlacer(doc *yaml.Node) *placer { return &placer{doc: doc} }

// lookup is places(doc)[n], comma ok.
func (p *placer) lookup(n *yaml.Node) (place, bool) {
	if pl, ok := p.known[n]; ok || p.whole {
		return pl, ok
	}
	if p.walks == placerWalks {
		p.known, p.whole = places(p.doc), true
		pl, ok := p.known[n]
		return pl, ok
	}
	p.walks++
	if p.known == nil {
		p.known = make(map[*yaml.Node]place, 16)
	}
	var at place
	found := false
	walkPlaces(p.doc, func(c *yaml.Node, pl place) (enter, stop bool) {
		return true, c == n
	}, func(c *yaml.Node, pl place) {
		if !found {
			at, found = pl, true
		}
		if _, ok := p.known[c]; !ok {
			p.known[c] = pl
		}
	})
	return at, found
}

// at is places(doc)[n]: the zero place for a node not in doc.
func (p *placer) at(n *yaml.Node) place {
	pl, _ := p.lookup(n)
	return pl
}

// countNodes counts n and the nodes below it (an upper bound of places'
// size, which indexes a node met twice once).
func countNodes(n *yaml.Node) int {
	c := 1
	for _, k := range n.Content {
		c += countNodes(k)
	}
	return c
}

// duplicateKey returns the first key that appears twice in one mapping of n.
func duplicateKey(n *yaml.Node) *yaml.Node {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			if d := duplicateKey(c); d != nil {
				return d
			}
		}
	case yaml.MappingNode:
		var seen map[string]bool // for a long mapping only
		if len(n.Content) > 2*shortMapping {
			seen = map[string]bool{}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind == yaml.ScalarNode && seenKey(n.Content[:i], k, seen) {
				return k
			}
			if d := duplicateKey(n.Content[i+1]); d != nil {
				return d
			}
		}
	}
	return nil
}

// shortMapping is the most keys a mapping has for duplicateKey to
// compare each key with those before it rather than keep a set: most
// mappings are short, and the set cost a map and a string a key.
const shortMapping = 16

// seenKey reports whether scalar key k, of the mapping whose entries
// before it are before, is a key of before too (the same value and tag).
// seen, when not nil, holds those keys, and k is added.
func seenKey(before []*yaml.Node, k *yaml.Node, seen map[string]bool) bool {
	if seen != nil {
		id := k.ShortTag() + "\x00" + k.Value
		dup := seen[id]
		seen[id] = true
		return dup
	}
	for j := 0; j < len(before); j += 2 {
		// The tag is resolved only for the same value: resolving costs.
		if b := before[j]; b.Kind == yaml.ScalarNode && b.Value == k.Value && b.ShortTag() == k.ShortTag() {
			return true
		}
	}
	return false
}

// Field returns the key and value nodes of name in mapping m, the first
// such key as kyaml's RNode.Field finds it; nil when m is not a mapping
// or has no such key. It walks the mapping itself: kyaml's wrappers cost
// an allocation a key, which discovery and every edit paid for each
// field of each workload.
func Field(m *yaml.Node, name string) (k, v *yaml.Node) {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k != nil && k.Value == name {
			return k, docContent(m.Content[i+1])
		}
	}
	return nil, nil
}

// docContent is what kyaml's RNode.YNode returns for n: a document's
// node, n itself otherwise.
func docContent(n *yaml.Node) *yaml.Node {
	if n != nil && n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return n.Content[0]
	}
	return n
}

// Str returns the value of a scalar field, "" when absent or not a scalar.
func Str(m *yaml.Node, name string) string {
	_, v := Field(m, name)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	return v.Value
}

// StringMap returns the scalar entries of a mapping.
func StringMap(m *yaml.Node) map[string]string {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	out := map[string]string{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if k.Kind == yaml.ScalarNode && v.Kind == yaml.ScalarNode {
			out[k.Value] = v.Value
		}
	}
	return out
}

// Lookup follows a path of mapping keys as kyaml's Lookup does; nil when
// any step is missing or not a mapping. A path of plain keys (all of the
// tool's) is walked here, without kyaml's wrappers and the field path
// they build at each step; any other (a list index, [name=value]) is left
// to kyaml.
func Lookup(n *yaml.Node, path ...string) *yaml.Node {
	if n == nil {
		return nil
	}
	for _, p := range path {
		if !plainKey(p) {
			rn, err := yaml.NewRNode(n).Pipe(yaml.Lookup(path...))
			if err != nil || rn == nil {
				return nil
			}
			return rn.YNode()
		}
	}
	n = docContent(n)
	for _, p := range path {
		// kyaml: a null node has no fields, anything else not a
		// mapping is an error, and so is a mapping of odd length.
		if n == nil || n.Tag == yaml.NodeTagNull || n.Kind != yaml.MappingNode || len(n.Content)%2 != 0 {
			return nil
		}
		_, n = Field(n, p)
	}
	return n
}

// plainKey reports whether kyaml's PathGetter reads p as a mapping key
// and nothing else: not empty or blank (it skips those), not a number, a
// list index or match, "-" or "*".
func plainKey(p string) bool {
	if p == "" || p == "-" || p == "*" || strings.TrimSpace(p) != p || yaml.IsListIndex(p) {
		return false
	}
	// A number, signed or not, is an index for kyaml; telling it from a
	// key by its digits spares strconv.Atoi's error for every key.
	digits := strings.TrimLeft(p, "+-")
	return len(p)-len(digits) > 1 || digits == "" || strings.TrimLeft(digits, "0123456789") != ""
}
