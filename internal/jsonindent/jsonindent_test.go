package jsonindent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// decision is a plan's decision as JSON: omitted fields, a slice.
type decision struct {
	Namespace string   `json:"namespace"`
	Kind      string   `json:"kind"`
	Name      string   `json:"name"`
	Cluster   string   `json:"cluster,omitempty"`
	Reason    string   `json:"reason"`
	Policies  []string `json:"policies,omitempty"`
}

// TestEncodeJSONIndents: a value encoded at a depth is what encoding/json
// writes for it with SetIndent, byte for byte, whatever its strings hold.
func TestEncodeJSONIndents(t *testing.T) {
	tests := []struct {
		name string
		v    any
	}{
		{"scalar", 0.25},
		{"string", `a "quoted" \ {[,:]} <b>&`},
		{"empty", map[string]any{"a": []int{}, "b": map[string]int{}, "c": nil}},
		{"nested", map[string]any{"x": []any{1, "two", []any{}, map[string]any{"k": []string{"[", "]", "\\", `"`}}}}},
		{"escapes", []string{"\n\t\u2028", "ünï", `\"`, `\\`, "end\\"}},
		{"struct", decision{Namespace: "ns", Kind: "Deployment", Name: "a", Reason: `why: "x" {y}`, Policies: []string{"p"}}},
		{"empty slice", []decision{}},
	}
	// One encoder for every case, as a plan uses one for every part.
	var out bytes.Buffer
	w := bufio.NewWriter(&out)
	e := NewEncoder(w)
	for _, tc := range tests {
		for _, prefix := range []string{"", "    "} {
			t.Run(tc.name+"/"+prefix, func(t *testing.T) {
				var want bytes.Buffer
				enc := json.NewEncoder(&want)
				enc.SetEscapeHTML(false)
				if prefix != "" {
					enc.SetIndent(prefix, "  ")
				}
				require.NoError(t, enc.Encode(tc.v))
				out.Reset()
				require.NoError(t, e.Encode(tc.v, prefix))
				require.NoError(t, w.Flush())
				require.Equal(t, string(bytes.TrimSuffix(want.Bytes(), []byte("\n"))), out.String())
			})
		}
	}
}

// FuzzIndentJSON: Append indents any value's compact encoding as
// json.Indent does, whatever its strings hold.
func FuzzIndentJSON(f *testing.F) {
	f.Add("plain", "", 1.5)
	f.Add(`"\{[,:]}`, "\u00e9\n", 1e-7)
	f.Fuzz(func(t *testing.T, a, b string, x float64) {
		v := map[string]any{a: []any{b, map[string]any{}, []string{a, b}, map[string]any{b: a}}, "n": []any{}}
		if x == x && x < 1e300 && x > -1e300 {
			v["x"] = x
		}
		compact, err := json.Marshal(v)
		require.NoError(t, err)
		var want bytes.Buffer
		require.NoError(t, json.Indent(&want, compact, "  ", "  "))
		require.Equal(t, want.String(), string(Append(nil, compact, "  ")))
	})
}
