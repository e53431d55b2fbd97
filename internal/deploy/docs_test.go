package deploy_test

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/require"
)

// markdownLink is a Markdown link's target: ](target) or ](target "title").
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// TestDocLinks: every relative link of the README and docs/ leads to a
// file or directory of the repository, so the documentation holds for a
// clone; nothing links outside it. A link to a section (#anchor) of a
// Markdown file names one of its headings.
func TestDocLinks(t *testing.T) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	detail, err := filepath.Glob(filepath.Join(root, "docs", "benchmarks", "*.md"))
	require.NoError(t, err)
	docs = append(docs, detail...)
	docs = append(docs, filepath.Join(root, "README.md"), filepath.Join(root, "BENCHMARKS.md"))
	checked := 0
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		require.NoError(t, err)
		for _, m := range markdownLink.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			target, anchor, _ := strings.Cut(target, "#")
			path := filepath.Clean(filepath.Join(filepath.Dir(doc), target))
			if target == "" {
				path = doc // a section of the same document
			}
			rel, err := filepath.Rel(root, path)
			require.NoError(t, err)
			require.False(t, strings.HasPrefix(rel, ".."), "%s links %s, outside the repository", doc, m[1])
			_, err = os.Stat(path)
			require.NoError(t, err, "%s links %s", doc, m[1])
			if anchor != "" && strings.HasSuffix(path, ".md") {
				linked, err := os.ReadFile(path)
				require.NoError(t, err)
				require.Contains(t, headingAnchors(string(linked)), anchor, "%s links %s: no such heading", doc, m[1])
			}
			checked++
		}
	}
	require.Greater(t, checked, 20, "the links were found")
}

// headingAnchors is the anchors GitHub gives the headings of a Markdown
// document: lower case, punctuation but - and _ dropped, spaces as
// hyphens, a repeated one numbered. Headings in code blocks are none.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inBlock := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inBlock = !inBlock
			continue
		}
		heading, ok := strings.CutPrefix(line, "#")
		if inBlock || !ok {
			continue
		}
		heading = strings.TrimSpace(strings.TrimLeft(heading, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(heading) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// TestDesignCitedInTheRepository: the design is cited as docs/design.md;
// nothing cites the team document it replaced, which a clone lacks.
func TestDesignCitedInTheRepository(t *testing.T) {
	outside := []string{"DESIGN" + " §", "shared/" + "DESIGN.md"}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml", ".sh":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		checked++
		for i, line := range strings.Split(string(b), "\n") {
			for _, o := range outside {
				if strings.Contains(line, o) {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d cites %q, outside the repository: cite docs/design.md", rel, i+1, o)
				}
			}
		}
		return nil
	})
	require.NoError(t, err)
	require.Greater(t, checked, 100, "the files were found")
}
