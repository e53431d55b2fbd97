package deploy_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

var update = flag.Bool("update", false, "rewrite the chart's README from its values.yaml")

const (
	readmeStart = "<!-- values: generated from values.yaml by TestChartReadme, go test ./internal/deploy -run TestChartReadme -update -->\n"
	readmeEnd   = "<!-- end of values -->\n"
)

// valueRow is one documented value of the chart.
type valueRow struct{ key, typ, def, doc string }

// description is what a key's comment says after "-- " (the helm-docs
// convention), its following comment lines included; "" when the key has
// no such comment.
func description(k *yaml.Node) string {
	var out []string
	found := false
	for _, line := range strings.Split(k.HeadComment, "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if text, ok := strings.CutPrefix(line, "-- "); ok {
			found, out = true, []string{text}
			continue
		}
		if found && line != "" {
			out = append(out, line)
		}
	}
	return strings.Join(out, " ")
}

// valueRows walks values.yaml: a key described with "-- " is one row,
// its value shown whole; an undescribed mapping is walked into; any other
// key is a row without a description.
func valueRows(t *testing.T, n *yaml.Node, prefix string) []valueRow {
	t.Helper()
	var rows []valueRow
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := strings.TrimPrefix(prefix+"."+k.Value, ".")
		doc := description(k)
		if doc == "" && v.Kind == yaml.MappingNode && len(v.Content) > 0 {
			rows = append(rows, valueRows(t, v, key)...)
			continue
		}
		var val any
		require.NoError(t, v.Decode(&val), key)
		def, err := json.Marshal(val)
		require.NoError(t, err)
		rows = append(rows, valueRow{key: key, typ: typeOf(v), def: string(def), doc: doc})
	}
	return rows
}

func typeOf(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "list"
	}
	switch v.ShortTag() {
	case "!!int":
		return "int"
	case "!!bool":
		return "bool"
	case "!!null":
		return "int or null"
	}
	return "string"
}

// chartValuesTable renders every value of the chart's values.yaml as a
// Markdown table.
func chartValuesTable(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	require.NoError(t, err)
	var doc yaml.Node
	require.NoError(t, yaml.Unmarshal(b, &doc))
	var s strings.Builder
	s.WriteString("| key | type | default | description |\n|---|---|---|---|\n")
	for _, r := range valueRows(t, doc.Content[0], "") {
		require.NotEmpty(t, r.doc, "values.yaml: %s has no \"# -- \" comment to describe it", r.key)
		cell := func(x string) string { return strings.ReplaceAll(x, "|", `\|`) }
		fmt.Fprintf(&s, "| `%s` | %s | `%s` | %s |\n", r.key, r.typ, cell(r.def), cell(r.doc))
	}
	return s.String()
}

// TestChartReadme: the chart README's table of values is the one
// values.yaml makes today, its comments as the descriptions, and every
// value is described.
func TestChartReadme(t *testing.T) {
	name := filepath.Join(chartDir, "README.md")
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	s := string(b)
	start := strings.Index(s, readmeStart)
	end := strings.Index(s, readmeEnd)
	require.True(t, start >= 0 && end > start, "%s: the markers of the generated table", name)
	want := s[:start+len(readmeStart)] + chartValuesTable(t) + s[end:]
	if *update {
		require.NoError(t, os.WriteFile(name, []byte(want), 0o644))
		return
	}
	require.Equal(t, want, s, "run go test ./internal/deploy -run TestChartReadme -update")
}
