package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/pflag"
)

// Rule says what values a key takes beyond its flag's type. The command
// that owns the flag checks its values with the same lists, and the
// chart's values.schema.json is made from them (Schema), so that
// `helm install` refuses what `config validate` would.
type Rule struct {
	// Enum lists the values a string, or each item of a list, takes.
	Enum []string
	// Patterns are regular expressions a string, or each item of a
	// list, matches, all of them; written in the syntax both Go's regexp
	// and JSON Schema read (no lookaround, no backreferences).
	Patterns []string
	// Minimum bounds an integer from below, when set.
	Minimum *int64
}

// Min is a Rule's Minimum.
func Min(n int64) *int64 { return &n }

// Cond is a condition on one key: that it holds Value, or, with Value
// empty, that it is set to something other than its flag's default (a
// value equal to the default sets nothing: setScalar). Unset negates it.
type Cond struct {
	Path  string
	Value string
	Unset bool
}

// Need is a setting that requires or excludes others: when every
// condition of When holds, each key of Needs must be set and each key
// of Excludes left unset.
type Need struct {
	When     []Cond
	Needs    []string
	Excludes []string
}

// Schema is the JSON Schema of a config file whose keys are set by the
// flags in fs: each key typed as its flag parses it, described by its
// usage, constrained by its rule (by flag name), with no key beyond them
// (additionalProperties: false at every level) and the needs as if/then
// pairs. Keys whose flags fs lacks are left out. An error is a rule or a
// need that names no key: the tables have drifted from the keys.
func Schema(fs *pflag.FlagSet, rules map[string]Rule, needs []Need) (map[string]any, error) {
	root := object()
	byPath := map[string]*pflag.Flag{}
	for _, k := range keys {
		fl := fs.Lookup(k.Flag)
		if fl == nil {
			continue
		}
		byPath[k.Path] = fl
		parent := root
		parts := strings.Split(k.Path, ".")
		for _, p := range parts[:len(parts)-1] {
			props := parent["properties"].(map[string]any)
			next, ok := props[p].(map[string]any)
			if !ok {
				next = object()
				props[p] = next
			}
			parent = next
		}
		prop, err := keySchema(fl, rules[k.Flag])
		if err != nil {
			return nil, fmt.Errorf("config key %s: %w", k.Path, err)
		}
		parent["properties"].(map[string]any)[parts[len(parts)-1]] = prop
	}
	for flag := range rules {
		if fs.Lookup(flag) == nil || !slices.ContainsFunc(keys, func(k Key) bool { return k.Flag == flag }) {
			return nil, fmt.Errorf("a rule names --%s, which sets no config key", flag)
		}
	}
	var all []any
	for _, n := range needs {
		s, err := needSchema(n, byPath)
		if err != nil {
			return nil, err
		}
		all = append(all, s)
	}
	if len(all) > 0 {
		root["allOf"] = all
	}
	return root, nil
}

func object() map[string]any {
	return map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{}}
}

// durationPattern is what time.ParseDuration reads, without a sign.
const durationPattern = `^(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))+)$`

func keySchema(fl *pflag.Flag, r Rule) (map[string]any, error) {
	usage := fl.Usage
	if name, u := pflag.UnquoteUsage(fl); name != "" {
		usage = u
	}
	s := map[string]any{"description": usage}
	str := map[string]any{"type": "string"}
	if len(r.Enum) > 0 {
		str["enum"] = r.Enum
	}
	addPatterns(str, r.Patterns)
	switch typ := fl.Value.Type(); typ {
	case "bool":
		s["type"] = "boolean"
		s["default"] = fl.DefValue == "true"
	case "int", "int64":
		s["type"] = "integer"
		if r.Minimum != nil {
			s["minimum"] = *r.Minimum
		}
		var n int64
		if _, err := fmt.Sscan(fl.DefValue, &n); err != nil {
			return nil, fmt.Errorf("default %q of --%s: %w", fl.DefValue, fl.Name, err)
		}
		s["default"] = n
	case "duration":
		s["type"] = "string"
		addPatterns(s, append([]string{durationPattern}, r.Patterns...))
		s["default"] = fl.DefValue
	case "stringArray":
		s["type"] = "array"
		s["items"] = str
	case "string":
		for k, v := range str {
			s[k] = v
		}
		if fl.DefValue != "" {
			s["default"] = fl.DefValue
		}
	default:
		return nil, fmt.Errorf("--%s is a %s, which a config file cannot set", fl.Name, typ)
	}
	if r.Minimum != nil && s["type"] != "integer" {
		return nil, fmt.Errorf("--%s: a minimum for a %s", fl.Name, s["type"])
	}
	return s, nil
}

// addPatterns puts patterns on s: the first as its pattern, the others
// each in an allOf of their own, as a schema holds one pattern.
func addPatterns(s map[string]any, patterns []string) {
	for i, p := range patterns {
		if i == 0 {
			s["pattern"] = p
			continue
		}
		all, _ := s["allOf"].([]any)
		s["allOf"] = append(all, map[string]any{"pattern": p})
	}
}

// needSchema writes a need as JSON Schema's if/then, each condition a
// nested path of properties.
func needSchema(n Need, byPath map[string]*pflag.Flag) (map[string]any, error) {
	var when []any
	for _, c := range n.When {
		fl, ok := byPath[c.Path]
		if !ok {
			return nil, fmt.Errorf("a need names %s, which is no config key", c.Path)
		}
		var s map[string]any
		switch {
		case c.Value != "":
			s = at(c.Path, map[string]any{"const": typed(fl, c.Value)}, true)
		default:
			s = at(c.Path, isSet(fl), true)
		}
		if c.Unset {
			s = map[string]any{"not": s}
		}
		when = append(when, s)
	}
	var then []any
	for _, p := range n.Needs {
		fl, ok := byPath[p]
		if !ok {
			return nil, fmt.Errorf("a need names %s, which is no config key", p)
		}
		then = append(then, at(p, isSet(fl), true))
	}
	for _, p := range n.Excludes {
		fl, ok := byPath[p]
		if !ok {
			return nil, fmt.Errorf("a need names %s, which is no config key", p)
		}
		then = append(then, at(p, notSet(fl), false))
	}
	cond := map[string]any{"allOf": when}
	if len(when) == 1 {
		cond = when[0].(map[string]any)
	}
	return map[string]any{"if": cond, "then": map[string]any{"allOf": then}}, nil
}

// isSet says that a flag's key holds a value other than its default.
func isSet(fl *pflag.Flag) map[string]any {
	switch fl.Value.Type() {
	case "stringArray":
		return map[string]any{"minItems": 1}
	case "string":
		if fl.DefValue == "" {
			return map[string]any{"minLength": 1}
		}
	}
	return map[string]any{"not": map[string]any{"const": typed(fl, fl.DefValue)}}
}

// notSet says that a flag's key holds its default, or nothing. It is the
// negation of isSet written as what the key must hold, so that Helm's
// error names the value wanted (an empty string) instead of "'not'
// failed".
func notSet(fl *pflag.Flag) map[string]any {
	if fl.Value.Type() == "stringArray" {
		return map[string]any{"maxItems": 0}
	}
	return map[string]any{"const": typed(fl, fl.DefValue)}
}

// typed is a flag's value as the JSON a config file holds it in.
func typed(fl *pflag.Flag, v string) any {
	switch fl.Value.Type() {
	case "bool":
		return v == "true"
	case "int", "int64":
		var n int64
		fmt.Sscan(v, &n)
		return n
	}
	return v
}

// at wraps s in the properties of a key path; required says the path
// must be there (a condition that must hold, a key that is needed),
// rather than only checked when it is.
func at(path string, s map[string]any, required bool) map[string]any {
	parts := strings.Split(path, ".")
	for i := len(parts) - 1; i >= 0; i-- {
		wrap := map[string]any{"properties": map[string]any{parts[i]: s}}
		if required {
			wrap["required"] = []string{parts[i]}
		}
		s = wrap
	}
	return s
}
