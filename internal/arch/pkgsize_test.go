package arch_test

import (
	"bytes"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxPackageLines bounds a package's Go outside tests, in lines as wc -l
// counts them: about 2,500, past which a package most often does several
// jobs. The hundred lines of slack keep a small change from forcing a
// split.
const maxPackageLines = 2600

// TestPackageSize: no package outside internal/testenv (test support,
// which grows with what the tests start) is longer than maxPackageLines,
// unless its doc comment says why it is "one job".
func TestPackageSize(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, p := range packages(t) {
		if p == "internal/testenv" || strings.HasPrefix(p, "internal/testenv/") {
			continue
		}
		files, err := filepath.Glob(filepath.Join(root, p, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		lines, doc := 0, ""
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			lines += bytes.Count(b, []byte("\n"))
			pf, err := parser.ParseFile(token.NewFileSet(), f, b, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if pf.Doc != nil {
				doc += pf.Doc.Text()
			}
		}
		if lines > maxPackageLines && !strings.Contains(strings.ToLower(doc), "one job") {
			t.Errorf("%s has %d lines of Go outside tests (bound %d): split it by job, or say in its doc comment why it is one job",
				p, lines, maxPackageLines)
		}
	}
}
