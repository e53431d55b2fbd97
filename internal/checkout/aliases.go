package checkout

import (
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// MaxAliasNodes is how many nodes aliases may add to one file when they
// are expanded. A parsed file costs memory in proportion to its text, but
// every reader that follows aliases (the policy decoder, kyaml's lookups)
// does work in proportion to the expanded tree, and nested aliases grow
// it exponentially: 18 KB of them once took 25 s and 1.4 GB. A million
// nodes is the work of decoding a few megabytes of plain YAML, well under
// a second, while manifests that use anchors to share a block or two add
// hundreds. The bound is absolute rather than a multiple of the file's own
// size, so that a large file cannot buy a larger expansion; and it is per
// file, not per document, so that many small bombs cannot add up.
const MaxAliasNodes = 1_000_000

// ErrAliases: aliases expand a file beyond MaxAliasNodes, or into itself.
var ErrAliases = errors.New("aliases expand beyond the limit")

// AliasError is a file refused by CheckAliases.
type AliasError struct {
	// Line and Column are where the alias that crossed the limit is.
	Line, Column int
	Alias        string
	// Cycle is true for an alias inside the node it names.
	Cycle bool
}

func (e *AliasError) Error() string {
	if e.Cycle {
		return fmt.Sprintf("%v: alias *%s is inside the node it refers to", ErrAliases, e.Alias)
	}
	return fmt.Sprintf("%v: with alias *%s, aliases add more than %d nodes", ErrAliases, e.Alias, MaxAliasNodes)
}

func (e *AliasError) Unwrap() error { return ErrAliases }

// CheckAliases refuses the documents of one file when expanding their
// aliases would add more than MaxAliasNodes nodes, or never end (an alias
// inside the node it names, which the parser accepts). It never expands
// anything itself: the expanded size of each anchored node is computed
// once and remembered, so the check is linear in the parsed tree. Every
// reader of YAML runs it after parsing and before following any alias.
func CheckAliases(docs ...*yaml.Node) error {
	c := &aliasCounter{size: map[*yaml.Node]int64{}, open: map[*yaml.Node]bool{}}
	for _, d := range docs {
		if err := c.walk(d); err != nil {
			return err
		}
	}
	return nil
}

type aliasCounter struct {
	// size is the expanded size of each anchored node seen.
	size map[*yaml.Node]int64
	// open are the anchored nodes being measured: an alias to one of them
	// is inside it.
	open map[*yaml.Node]bool
	// added is what the aliases met so far add to the file.
	added int64
}

// walk visits the file's own nodes, charging each alias with what it adds.
func (c *aliasCounter) walk(n *yaml.Node) error {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		s, err := c.expanded(n.Alias, n)
		if err != nil {
			return err
		}
		c.added = addSat(c.added, s-1)
		if c.added > MaxAliasNodes {
			return &AliasError{Line: n.Line, Column: n.Column, Alias: n.Value}
		}
		return nil
	}
	if n.Anchor != "" {
		// Measure it now, while it is being walked anyway, so that the
		// aliases that follow find its size.
		if _, err := c.expanded(n, n); err != nil {
			return err
		}
	}
	for _, ch := range n.Content {
		if err := c.walk(ch); err != nil {
			return err
		}
	}
	return nil
}

// expanded is the size of n with its aliases expanded, up to a bound far
// above the limit; from is the alias that asks, for errors.
func (c *aliasCounter) expanded(n, from *yaml.Node) (int64, error) {
	if n == nil {
		return 1, nil
	}
	if s, ok := c.size[n]; ok {
		return s, nil
	}
	if c.open[n] {
		return 0, &AliasError{Line: from.Line, Column: from.Column, Alias: from.Value, Cycle: true}
	}
	if n.Kind == yaml.AliasNode {
		return c.expanded(n.Alias, n)
	}
	if n.Anchor != "" {
		c.open[n] = true
		defer delete(c.open, n)
	}
	s := int64(1)
	for _, ch := range n.Content {
		cs, err := c.expanded(ch, from)
		if err != nil {
			return 0, err
		}
		s = addSat(s, cs)
	}
	if n.Anchor != "" {
		c.size[n] = s
	}
	return s, nil
}

// addSat adds without overflowing: nested aliases can name more nodes
// than an int64 counts, and any such number is simply too many.
func addSat(a, b int64) int64 {
	const most = 1 << 62
	if a > most-b {
		return most
	}
	return a + b
}
