package plan_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestMarkdownEscapesInput: names, reasons and problems from a repository
// cannot add a table row or cell, markup or HTML to a CI job's summary,
// nor reach a terminal as escape sequences.
func TestMarkdownEscapesInput(t *testing.T) {
	tests := []struct {
		name    string
		ref     string
		problem string
		want    []string
		absent  []string
	}{
		{
			name: "a pipe and a line break in a name",
			ref:  "chat | 0.1 | 0.9 | upsize | forged |\n| x",
			want: []string{`chat \| 0.1 \| 0.9 \| upsize \| forged \|\\n\| x`},
		},
		{
			name:   "markup and HTML in a name",
			ref:    "<img src=x onerror=alert(1)> **bold** [link](http://evil) `code`",
			want:   []string{"&lt;img src=x onerror=alert(1)&gt; \\*\\*bold\\*\\* \\[link\\](http://evil) \\`code\\`"},
			absent: []string{"<img"},
		},
		{
			name:    "control characters in a problem",
			ref:     "chat",
			problem: "title \x1b]0;pwned\a, bidi \u202e",
			want:    []string{`title \\x1b\]0;pwned\\a, bidi \\u202e`},
			absent:  []string{"\x1b", "\a", "\u202e"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &plan.Plan{Decisions: []plan.Decision{{
				Decision: engine.LeftAlone(engine.Allocation{Form: engine.Fraction, GPUs: 0.5}, engine.CauseOutOfScope, ""),
				Workload: patcher.Workload{Ref: usage.Ref{Namespace: "inference", Kind: "Deployment", Name: tt.ref}},
			}}}
			if tt.problem != "" {
				p.Problems = []plan.Problem{{File: "apps/a.yaml", Line: 3, Message: tt.problem}}
			}
			var out bytes.Buffer
			require.NoError(t, p.WriteMarkdown(&out))
			s := out.String()
			for _, w := range tt.want {
				require.Contains(t, s, w)
			}
			for _, a := range tt.absent {
				require.NotContains(t, s, a)
			}
			rows := 0
			for line := range strings.SplitSeq(s, "\n") {
				if strings.HasPrefix(line, "| ") {
					rows++
				}
			}
			require.Equal(t, 2, rows, "the header and one workload:\n%s", s)
		})
	}
}

// TestMarkdownFence: a diff holding a run of backticks stays inside its
// block, and a path cannot open HTML.
func TestMarkdownFence(t *testing.T) {
	p := &plan.Plan{Files: []patcher.File{{
		Path: "apps/<b>chat</b>.yaml",
		Old:  []byte("# ```` four\nfraction: \"0.5\"\n"),
		New:  []byte("# ```` four\nfraction: \"0.6\"\n"),
	}}}
	var out bytes.Buffer
	require.NoError(t, p.WriteMarkdown(&out))
	s := out.String()
	require.Contains(t, s, "<summary><code>apps/&lt;b&gt;chat&lt;/b&gt;.yaml</code></summary>\n\n`````diff\n")
	require.Contains(t, s, "+fraction: \"0.6\"\n`````\n\n</details>\n")
}
