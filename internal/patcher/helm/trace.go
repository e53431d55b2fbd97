package helm

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Tracing a rendered field to the value that sets it. Nothing is guessed
// from template text: the candidates are the values whose scalar reads as
// the field's current value, and a candidate is the one only when setting
// it alone to the new value makes Helm render exactly what the op makes
// of the rendered object, every other object and field unchanged.

// valuePath is a path into values: string keys and int list indexes.
type valuePath []any

func (p valuePath) String() string {
	var b strings.Builder
	for _, e := range p {
		switch k := e.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", k)
		case string:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(k)
		}
	}
	return b.String()
}

// scalarText is how a template prints a value, ok=false for what is not
// a number or string.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	}
	return "", false
}

// typed returns s as a value of the type of like: a number stays a
// number, so that a template doing arithmetic on it still can.
func typed(s string, like any) any {
	switch like.(type) {
	case float64:
		if f, err := strconv.ParseFloat(s, 64); err == nil {
			return f
		}
	case int, int64:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n
		}
	}
	return s
}

// leavesEqual returns the paths of the scalars of v that print as text,
// in a stable order.
func leavesEqual(v any, text string) []valuePath {
	var out []valuePath
	var walk func(v any, p valuePath)
	walk = func(v any, p valuePath) {
		switch x := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(x[k], append(slices.Clone(p), k))
			}
		case []any:
			for i, e := range x {
				walk(e, append(slices.Clone(p), i))
			}
		default:
			if s, ok := scalarText(v); ok && strings.TrimSpace(s) == text {
				out = append(out, p)
			}
		}
	}
	walk(v, nil)
	return out
}

// deepCopy copies maps and lists of values.
func deepCopy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = deepCopy(e)
		}
		return l
	}
	return v
}

// getValue returns the value at p in v.
func getValue(v any, p valuePath) (any, bool) {
	for _, e := range p {
		switch k := e.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[k]; !ok {
				return nil, false
			}
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil, false
			}
			v = l[k]
		}
	}
	return v, true
}

// setValue sets the value at p in v, which must be there.
func setValue(v any, p valuePath, to any) bool {
	if len(p) == 0 {
		return false
	}
	parent, ok := getValue(v, p[:len(p)-1])
	if !ok {
		return false
	}
	switch k := p[len(p)-1].(type) {
	case string:
		if m, ok := parent.(map[string]any); ok {
			m[k] = to
			return true
		}
	case int:
		if l, ok := parent.([]any); ok && k < len(l) {
			l[k] = to
			return true
		}
	}
	return false
}

// winner returns the index of the layer whose value Helm uses at p: the
// last that has it, where a list is replaced whole by the last layer that
// has the list. -1 when no layer has it (a subchart's default, a global).
func winner(ls []valuesLayer, p valuePath) int {
	for i := len(ls) - 1; i >= 0; i-- {
		var v any = ls[i].vals
	walk:
		for j, e := range p {
			if _, ok := v.([]any); ok {
				return i // the list is this layer's, whole
			}
			m, isMap := v.(map[string]any)
			k, isKey := e.(string)
			if !isMap || !isKey {
				break walk
			}
			next, ok := m[k]
			switch {
			case !ok:
				break walk
			case j == len(p)-1:
				return i
			}
			v = next
		}
	}
	return -1
}

// coalesced returns the values Helm renders chart files with for user
// values vals: the chart's defaults, its subcharts' and globals below
// vals.
func coalesced(files map[string][]byte, vals map[string]any) (map[string]any, error) {
	ch, err := loadChart(files)
	if err != nil {
		return nil, err
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, err
	}
	v, err := util.CoalesceValues(ch, vals)
	if err != nil {
		return nil, err
	}
	return v, nil
}

// sameDocs compares a rendered stream with the documents it should
// parse to; the message names the first difference.
func sameDocs(out []byte, want []*yaml.Node) (string, bool) {
	s, err := splice.Parse(out)
	if err != nil {
		return "it does not parse: " + err.Error(), false
	}
	if len(s.Docs) != len(want) {
		return fmt.Sprintf("%d objects instead of %d", len(s.Docs), len(want)), false
	}
	for i, d := range s.Docs {
		if m := splice.Compare(want[i], d, ""); m != nil {
			obj := fmt.Sprintf("object %d", i+1)
			if len(want[i].Content) > 0 {
				root := want[i].Content[0]
				obj = fmt.Sprintf("%s %s", splice.Str(root, "kind"), splice.Str(splice.Lookup(root, "metadata"), "name"))
			}
			return fmt.Sprintf("%s, %s", obj, m), false
		}
	}
	return "", true
}

// maxTraceCandidates bounds the renders one traced field costs.
const maxTraceCandidates = 32

// trace returns the value of release r that sets a field from old to
// new alone: of the values that print as old, the one whose change to
// new renders exactly want. files are the chart's, vals the user values.
func trace(ctx context.Context, render renderFunc, files map[string][]byte, r *helmRelease, vals map[string]any, old, new string, want []*yaml.Node) (valuePath, error) {
	all, err := coalesced(files, vals)
	if err != nil {
		return nil, err
	}
	cands := leavesEqual(all, old)
	if len(cands) == 0 {
		return nil, fmt.Errorf("no value of the release is %q, so what sets the field is not known (not guessed)", old)
	}
	// Each candidate is one render: a value as common as "1" or "true"
	// would render the chart hundreds of times.
	if len(cands) > maxTraceCandidates {
		return nil, fmt.Errorf("%d values equal %q: cannot tell which sets the field (more than %d are not tried)", len(cands), old, maxTraceCandidates)
	}
	var hits []valuePath
	var whys []string // why each candidate is not the one
	for _, c := range cands {
		v := deepCopy(all).(map[string]any)
		cur, _ := getValue(v, c)
		setValue(v, c, typed(new, cur))
		out, err := render(ctx, files, r, v)
		if err != nil {
			whys = append(whys, fmt.Sprintf("%s to %s does not render: %v", c, new, err))
			continue
		}
		if why, ok := sameDocs(out, want); ok {
			hits = append(hits, c)
		} else {
			whys = append(whys, fmt.Sprintf("%s to %s renders %s", c, new, why))
		}
	}
	switch len(hits) {
	case 0:
		if len(whys) > 3 {
			whys = append(whys[:3], fmt.Sprintf("%d more", len(whys)-3))
		}
		return nil, fmt.Errorf("no value that is %q sets the field alone (%s), so what sets it is not known (not guessed)", old, strings.Join(whys, "; "))
	case 1:
		return hits[0], nil
	}
	names := make([]string, len(hits))
	for i, c := range hits {
		names[i] = c.String()
	}
	return nil, fmt.Errorf("each of %s sets the field alone, so which to edit is not known", strings.Join(names, ", "))
}
