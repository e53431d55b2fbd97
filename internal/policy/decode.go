package policy

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-rightsizing/recommender/internal/located"
)

// scalarDecoder is implemented by field types that parse their own scalar
// (durations, quantities) and so can refuse a bad value where it stands.
type scalarDecoder interface {
	decodeScalar(n *yaml.Node) error
}

// decoder maps a YAML node tree onto the policy structs strictly: unknown
// fields, duplicate keys and wrong types are errors naming file, line and
// field. It collects every error instead of stopping at the first, so that
// one run shows the author all that is wrong with a document.
type decoder struct {
	file string
	// project is true for documents of the project's own API group, which
	// may use fields tagged group:"project".
	project bool
	// errs are located at the field, which validation and linking read
	// to tell a broken scope or identity from a broken setting.
	errs []*located.Error
	// pos remembers where each decoded field stood, for errors found later
	// by validation.
	pos map[string]*yaml.Node
	// keys remembers the key node of each mapping field: a missing child is
	// best reported at its parent's key.
	keys map[string]*yaml.Node
	// root is the document, where an error is reported when nothing
	// closer was decoded.
	root *yaml.Node
	// undecoded are the fields that failed to decode.
	undecoded []string
}

func newDecoder(file string, project bool, root *yaml.Node) *decoder {
	return &decoder{file: file, project: project, pos: map[string]*yaml.Node{}, keys: map[string]*yaml.Node{}, root: root}
}

func (d *decoder) errorf(n *yaml.Node, field, format string, args ...any) {
	d.fieldError(n, field, fmt.Errorf(format, args...))
}

// fieldError records an error found while decoding.
func (d *decoder) fieldError(n *yaml.Node, field string, err error) {
	d.add(n, field, err)
	d.undecoded = append(d.undecoded, field)
}

func (d *decoder) add(n *yaml.Node, field string, err error) {
	e := &located.Error{File: d.file, Field: field, Err: err}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.errs = append(d.errs, e)
}

// undecodedNear reports whether a field, one of its parents or one of its
// children failed to decode. Validation then says nothing of it: its
// value is missing or partial because of an error already told, and
// "missing" or "must configure compute" would only mislead.
func (d *decoder) undecodedNear(field string) bool {
	for _, f := range d.undecoded {
		if f == field || within(field, f) || within(f, field) {
			return true
		}
	}
	return false
}

// within reports whether field lies under parent: a child field or an
// item of a list.
func within(field, parent string) bool {
	rest, ok := strings.CutPrefix(field, parent)
	return ok && parent != "" && (strings.HasPrefix(rest, ".") || strings.HasPrefix(rest, "["))
}

// at returns the node a field was decoded from, or the closest decoded
// parent, so that a validation error still points near the problem.
func (d *decoder) at(field string) *yaml.Node {
	if n, ok := d.pos[field]; ok {
		return n
	}
	for f := field; f != ""; {
		if n, ok := d.keys[f]; ok {
			return n
		}
		if n, ok := d.pos[f]; ok && strings.HasSuffix(f, "]") {
			// An item of a list has no key to point at: the item.
			return n
		}
		i := strings.LastIndexByte(f, '.')
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return d.root
}

// fail records a validation error on a field, unless the field is near
// one that failed to decode (undecodedNear).
func (d *decoder) fail(field, format string, args ...any) {
	if d.undecodedNear(field) {
		return
	}
	d.add(d.at(field), field, fmt.Errorf(format, args...))
}

var scalarDecoderType = reflect.TypeFor[scalarDecoder]()

// isMapping reports whether v is decoded from a mapping: a struct or a
// map, not a scalar type of its own (a duration, a quantity).
func isMapping(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Map:
		return true
	case reflect.Struct:
		return !v.Addr().Type().Implements(scalarDecoderType)
	}
	return false
}

func (d *decoder) decode(n *yaml.Node, field string, v reflect.Value) {
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	d.pos[field] = n
	if isNull(n) {
		// An explicit null is the same as leaving the field out.
		return
	}
	if v.Kind() == reflect.Pointer {
		// Set the pointer to a value only when it decoded cleanly, so
		// that validation does not report again on a value that never
		// was. A mapping is set all the same, holding what did decode:
		// its other fields are still validated, and a bad duration does
		// not hide a bad threshold beside it, nor make the rule look
		// missing.
		before := len(d.errs)
		nv := reflect.New(v.Type().Elem())
		d.decode(n, field, nv.Elem())
		if len(d.errs) == before || n.Kind == yaml.MappingNode && isMapping(nv.Elem()) {
			v.Set(nv)
		}
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(scalarDecoderType) {
		if n.Kind != yaml.ScalarNode {
			d.errorf(n, field, "expected a scalar, got %s", DescribeNode(n))
			return
		}
		if err := v.Addr().Interface().(scalarDecoder).decodeScalar(n); err != nil {
			d.fieldError(n, field, err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, field, v)
	case reflect.Map:
		d.decodeMap(n, field, v)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.errorf(n, field, "expected a list, got %s", DescribeNode(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, fmt.Sprintf("%s[%d]", field, i), s.Index(i))
		}
		v.Set(s)
	case reflect.String:
		if !d.expectScalar(n, field, "!!str", "a string") {
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if !d.expectScalar(n, field, "!!bool", "true or false") {
			return
		}
		b, err := strconv.ParseBool(strings.ToLower(n.Value))
		if err != nil {
			d.errorf(n, field, "expected true or false, got %q", n.Value)
			return
		}
		v.SetBool(b)
	case reflect.Int:
		if !d.expectScalar(n, field, "!!int", "an integer") {
			return
		}
		i, err := strconv.ParseInt(n.Value, 0, 32)
		if err != nil {
			d.errorf(n, field, "expected an integer, got %q", n.Value)
			return
		}
		v.SetInt(i)
	default:
		// Only reached if a new field type is added without support here.
		d.errorf(n, field, "cannot decode into %s", v.Type())
	}
}

func (d *decoder) expectScalar(n *yaml.Node, field, tag, want string) bool {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != tag {
		hint := ""
		if tag == "!!str" && n.Kind == yaml.ScalarNode {
			hint = " (quote it)"
		}
		d.errorf(n, field, "expected %s, got %s%s", want, DescribeNode(n), hint)
		return false
	}
	return true
}

func (d *decoder) decodeStruct(n *yaml.Node, field string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, field, "expected a mapping, got %s", DescribeNode(n))
		return
	}
	t := v.Type()
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		name := k.Value
		path := join(field, name)
		if seen[name] {
			d.errorf(k, path, "duplicate field")
			continue
		}
		seen[name] = true
		d.keys[path] = k
		f, ok := fieldByTag(t, name)
		if !ok {
			d.errorf(k, path, "unknown field%s", suggest(t, name))
			continue
		}
		if f.Tag.Get("group") == "project" && !d.project {
			d.errorf(k, path, "field is only available in apiVersion %s/%s", ProjectGroup, Version)
			continue
		}
		d.decode(val, path, v.FieldByIndex(f.Index))
	}
}

func (d *decoder) decodeMap(n *yaml.Node, field string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.errorf(n, field, "expected a mapping, got %s", DescribeNode(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		path := join(field, k.Value)
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.errorf(k, path, "duplicate key")
			continue
		}
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, path, e)
		m.SetMapIndex(reflect.ValueOf(k.Value), e)
	}
	v.Set(m)
}

func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if tagName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func tagName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return name
}

// suggest names the known field closest to a misspelt one
// (located.Nearest), or, when none is close, the fields known there.
func suggest(t reflect.Type, name string) string {
	var known []string
	for i := range t.NumField() {
		if n := tagName(t.Field(i)); n != "" {
			known = append(known, n)
		}
	}
	if near, ok := located.Nearest(name, known); ok {
		return fmt.Sprintf(" (did you mean %q?)", near)
	}
	if len(known) == 0 {
		return ""
	}
	return " (known fields: " + strings.Join(known, ", ") + ")"
}

func join(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// DescribeNode names a YAML node's type the way the author of a file
// would, for errors: "the string \"2m\"", "a list", "null". The config
// file's strict decoder says it the same way.
func DescribeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int":
			return "the integer " + n.Value
		case "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "an alias"
}

// position is where a field stood in its file.
type position struct {
	File         string
	Line, Column int
}

func (d *decoder) position(field string) position {
	p := position{File: d.file}
	if n := d.at(field); n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	return p
}
