package deploy_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// markdownLink is a Markdown link's target: ](target) or ](target "title").
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinks: every relative link of the README and docs/ leads to a
// file or directory of the repository, so the documentation holds for a
// clone; nothing links outside it.
func TestDocLinks(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md"))
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			path := filepath.Clean(filepath.Join(filepath.Dir(doc), target))
			rel, err := filepath.Rel(root, path)
			require.NoError(t, err)
			require.False(t, strings.HasPrefix(rel, ".."), "%s links %s, outside the repository", doc, m[1])
			_, err = os.Stat(path)
			require.NoError(t, err, "%s links %s", doc, m[1])
			checked++
		}
	}
	require.Greater(t, checked, 20, "the links were found")
}
