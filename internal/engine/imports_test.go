package engine_test

import (
	"go/build"
	"strings"
	"testing"
)

// TestDecidingDoesNoIO: the decision math, and every package of this
// module it imports, imports nothing that reads files, talks HTTP or
// parses YAML. "The decision math does no I/O" is then true of packages,
// not only of a function.
func TestDecidingDoesNoIO(t *testing.T) {
	const module = "github.com/gpu-rightsizing/recommender/"
	forbidden := func(path string) bool {
		switch path {
		case "os", "io/fs", "net/http", "os/exec", "net":
			return true
		}
		return strings.Contains(path, "yaml")
	}
	seen := map[string]bool{}
	queue := []string{module + "internal/engine"}
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
	for _, want := range []string{"internal/engine", "internal/kai", "internal/usage"} {
		if !seen[module+want] {
			t.Errorf("%s was not checked", want)
		}
	}
}
