package splice

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ScalarOpts says how a scalar value is written. The zero value writes
// any scalar, plain when it can be, for block context.
type ScalarOpts struct {
	// Quote double-quotes a new value whatever it holds (KAI's docs write
	// gpu-fraction: "0.5", Kubernetes' write nvidia.com/gpu: "1").
	Quote bool
	// AsString: the value must read back as a string (an annotation
	// value, an argument), so a plain 0.5 or true is quoted; without it
	// any scalar will do (a quantity like 1).
	AsString bool
	// flow: the scalar sits in a flow collection, where , [ ] { } end a
	// plain scalar.
	flow bool
}

// plainOK reports whether s can be written as a plain scalar and read back
// as the same text, and as a string when o.asString. In flow context the
// flow indicators are excluded too.
func plainOK(s string, o ScalarOpts) bool {
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsAny(s, "\n\r\t") {
		return false
	}
	if strings.IndexByte("-?:,[]{}#&*!|>'\"%@`", s[0]) >= 0 && (s[0] != '-' || len(s) == 1 || s[1] == ' ') {
		return false
	}
	if strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	if o.flow && strings.ContainsAny(s, ",[]{}") {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) && r != ' ' {
			return false
		}
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(s), &n); err != nil || len(n.Content) != 1 {
		return false
	}
	c := n.Content[0]
	if c.Kind != yaml.ScalarNode || c.Style != 0 || c.Value != s {
		return false
	}
	if o.AsString && (c.ShortTag() != "!!str" || yaml.IsYaml1_1NonString(c)) {
		return false
	}
	return true
}

// doubleQuote renders s as a YAML double-quoted scalar.
func doubleQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError || r == '\ufeff' || !unicode.IsPrint(r) && r != ' ':
			switch {
			case r <= 0xFF:
				fmt.Fprintf(&b, `\x%02X`, r)
			case r <= 0xFFFF:
				fmt.Fprintf(&b, `\u%04X`, r)
			default:
				fmt.Fprintf(&b, `\U%08X`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// renderScalar writes s in the wanted style, falling back to double quotes
// when that style cannot carry it (o.quote is for new values: the caller
// passes DoubleQuotedStyle).
func renderScalar(s string, style yaml.Style, o ScalarOpts) (string, yaml.Style) {
	switch {
	case style&yaml.SingleQuotedStyle != 0:
		ok := true
		for _, r := range s {
			if r == '\n' || r == '\r' || !unicode.IsPrint(r) && r != ' ' {
				ok = false
			}
		}
		if ok {
			return "'" + strings.ReplaceAll(s, "'", "''") + "'", yaml.SingleQuotedStyle
		}
	case style&(yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0:
	default:
		if plainOK(s, o) {
			return s, 0
		}
	}
	return doubleQuote(s), yaml.DoubleQuotedStyle
}

// renderKey writes a mapping key: plain when it reads back as the same
// string, else double-quoted.
func renderKey(k string, flow bool) string {
	if plainOK(k, ScalarOpts{AsString: true, flow: flow}) {
		return k
	}
	return doubleQuote(k)
}

// entry is a mapping entry to be inserted: a string value or nested
// entries.
type entry struct {
	key      string
	value    string // when children is nil
	quote    bool   // always double-quote the value (scalarOpts.quote)
	children []entry

	// untyped: the value may read as a number or a boolean, as a value
	// of a Helm values file may (scalarOpts with neither quote nor
	// asString); else it must read as a string.
	untyped bool
}

// scalar renders the value: double-quoted when asked or needed, else plain.
func (e entry) scalar(flow bool) (string, yaml.Style) {
	if e.quote {
		return doubleQuote(e.value), yaml.DoubleQuotedStyle
	}
	return renderScalar(e.value, 0, ScalarOpts{AsString: !e.untyped, flow: flow})
}

// block renders e as block lines, each ending in eol.
func (e entry) block(indent string, step int, eol string) string {
	var b strings.Builder
	b.WriteString(indent + renderKey(e.key, false) + ":")
	if e.children == nil {
		v, _ := e.scalar(false)
		b.WriteString(" " + v + eol)
		return b.String()
	}
	b.WriteString(eol)
	for _, c := range e.children {
		b.WriteString(c.block(indent+strings.Repeat(" ", step), step, eol))
	}
	return b.String()
}

// flow renders e inline: key: value or key: {child, ...}.
func (e entry) flow() string {
	if e.children == nil {
		v, _ := e.scalar(true)
		return renderKey(e.key, true) + ": " + v
	}
	parts := make([]string, len(e.children))
	for i, c := range e.children {
		parts[i] = c.flow()
	}
	return renderKey(e.key, true) + ": {" + strings.Join(parts, ", ") + "}"
}

// nest wraps a scalar entry into parent maps: nest(["a","b"], leaf) is
// a: {b: leaf}.
func nest(path []string, leaf entry) entry {
	for i := len(path) - 1; i >= 0; i-- {
		leaf = entry{key: path[i], children: []entry{leaf}}
	}
	return leaf
}
