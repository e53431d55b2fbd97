package consolidate_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestConsolidatingDoesNoIO: the package, and every package of this
// module it imports, imports nothing that reads files, talks HTTP or
// parses YAML, as the decision math does not. This is why it takes the
// policy's node selector as an interface rather than importing the
// policy loader, which reads YAML.
func TestConsolidatingDoesNoIO(t *testing.T) {
	const module = "github.com/gpu-rightsizing/recommender/"
	forbidden := func(path string) bool {
		switch path {
		case "os", "io/fs", "net/http", "os/exec", "net":
			return true
		}
		return strings.Contains(path, "yaml")
	}
	seen := map[string]bool{}
	queue := []string{module + "internal/consolidate"}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		if seen[path] {
			continue
		}
		seen[path] = true
		pkg, err := build.Import(path, ".", 0)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for _, imp := range pkg.Imports {
			if forbidden(imp) {
				t.Errorf("%s imports %s", path, imp)
			}
			if strings.HasPrefix(imp, module) {
				queue = append(queue, imp)
			}
		}
	}
}
