package policy_test

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/policy"
)

var updateReference = flag.Bool("update", false, "rewrite docs/policy-reference.md")

const referenceDoc = "../../docs/policy-reference.md"

// typeDocs are the doc comments of types.go: of each type, and of each
// field as Type.Field.
func typeDocs(t *testing.T) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, parser.ParseComments)
	require.NoError(t, err)
	docs := map[string]string{}
	text := func(g *ast.CommentGroup) string {
		if g == nil {
			return ""
		}
		return strings.Join(strings.Fields(g.Text()), " ")
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			ts := s.(*ast.TypeSpec)
			docs[ts.Name.Name] = text(g.Doc)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fld := range st.Fields.List {
				for _, n := range fld.Names {
					docs[ts.Name.Name+"."+n.Name] = text(fld.Doc) + text(fld.Comment)
				}
			}
		}
	}
	return docs
}

// reference renders every field of every kind from the Go types the
// decoder fills: its path, its type, where it is accepted, its default
// and its doc comment (or its note). used says, for each field's key in
// fieldNotes, whether it has a note.
func reference(t *testing.T) (doc string, used map[string]bool) {
	t.Helper()
	docs := typeDocs(t)
	used = map[string]bool{}
	var b strings.Builder
	b.WriteString("# Policy reference\n\n" +
		"Generated from `internal/policy/types.go` by `go test ./internal/policy -run TestPolicyReference -update`;\n" +
		"a test fails when it is not current. Every field is optional unless the loader says otherwise.\n" +
		"Fields marked *project* are accepted only in apiVersion `" + policy.ProjectGroup + "/" + policy.Version + "`;\n" +
		"the others in `" + policy.KubexGroup + "/" + policy.Version + "` too. Durations are Prometheus-style (`90s`, `10m`, `7d`);\n" +
		"quantities are GPU amounts (`0.25`, `1`). *default* is what applies when the field is absent:\n" +
		"*required* fields must be given, *none* means the setting is off or empty.\n")
	kinds := []struct {
		kinds   []string
		typ     reflect.Type
		about   string
		project bool
	}{
		{[]string{policy.KindClusterStrategy, policy.KindStrategy}, reflect.TypeFor[policy.StrategySpec](), "Strategy", false},
		{[]string{policy.KindClusterProactive, policy.KindProactive}, reflect.TypeFor[policy.ProactiveSpec](), "ProactivePolicy", false},
		{[]string{policy.KindClusterReactive, policy.KindReactive}, reflect.TypeFor[policy.ReactiveSpec](), "ReactivePolicy", false},
		{[]string{policy.KindConsolidation}, reflect.TypeFor[policy.ConsolidationSpec](), "ConsolidationPolicy", false},
		{[]string{policy.KindClusterMap}, reflect.TypeFor[policy.ClusterMapSpec](), "ClusterMap", true},
	}
	for _, k := range kinds {
		fmt.Fprintf(&b, "\n## %s\n\n", strings.Join(k.kinds, ", "))
		if d := docs[k.about]; d != "" {
			b.WriteString(d + "\n\n")
		}
		b.WriteString("| field | type | accepted in | default | meaning |\n|---|---|---|---|---|\n")
		fields(&b, docs, "spec", k.typ, k.project, used)
	}
	return b.String(), used
}

// fields writes the rows of typ's fields under prefix; project says the
// parent is accepted only in the project's group, and so its fields are.
// used collects the keys of fieldNotes it finds a field for.
func fields(b *strings.Builder, docs map[string]string, prefix string, typ reflect.Type, project bool, used map[string]bool) {
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || !f.IsExported() {
			continue
		}
		path := prefix + "." + name
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		proj := project || f.Tag.Get("group") == "project"
		group := "both"
		if proj {
			group = "*project*"
		}
		meaning := docs[typ.Name()+"."+f.Name]
		if meaning == "" && ft.Kind() == reflect.Struct {
			meaning = docs[ft.Name()]
		}
		note, ok := fieldNotes[noteKey(path)]
		used[noteKey(path)] = ok
		if meaning == "" {
			meaning = note.Meaning
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", path, typeName(ft), group, note.Default, strings.ReplaceAll(meaning, "|", `\|`))
		switch {
		case ft.Kind() == reflect.Struct && ft.NumField() > 0 && !scalar(ft):
			fields(b, docs, path, ft, proj, used)
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			fields(b, docs, path+"[]", ft.Elem(), proj, used)
		}
	}
}

// scalar reports whether a struct type is written as one scalar.
func scalar(t reflect.Type) bool {
	return t == reflect.TypeFor[policy.Duration]() || t == reflect.TypeFor[policy.Quantity]()
}

func typeName(t reflect.Type) string {
	switch {
	case t == reflect.TypeFor[policy.Duration]():
		return "duration"
	case t == reflect.TypeFor[policy.Quantity]():
		return "quantity"
	}
	switch t.Kind() {
	case reflect.Struct:
		return "object"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return "list of objects"
		}
		return "list of " + t.Elem().Kind().String() + "s"
	case reflect.Map:
		return "map of " + t.Elem().Kind().String() + "s"
	case reflect.Int:
		return "integer"
	case reflect.Bool:
		return "boolean"
	}
	return t.Kind().String()
}

// TestPolicyReference: docs/policy-reference.md holds every field of every
// kind the decoder accepts today.
func TestPolicyReference(t *testing.T) {
	want, used := reference(t)
	var missing, stale []string
	for key, ok := range used {
		if !ok {
			missing = append(missing, key)
		}
	}
	for key := range fieldNotes {
		if _, ok := used[key]; !ok {
			stale = append(stale, key)
		}
	}
	slices.Sort(missing)
	slices.Sort(stale)
	require.Empty(t, missing, "fields without a default in fieldNotes (reference_notes_test.go)")
	require.Empty(t, stale, "notes in fieldNotes for fields that do not exist")
	if *updateReference {
		require.NoError(t, os.WriteFile(referenceDoc, []byte(want), 0o644))
	}
	got, err := os.ReadFile(referenceDoc)
	require.NoError(t, err)
	require.Equal(t, want, string(got), "run go test ./internal/policy -run TestPolicyReference -update")
}
