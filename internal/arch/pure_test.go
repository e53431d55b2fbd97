package arch_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// pure names the functional cores: each, and every package of the module
// it imports, reads no files, talks no HTTP and parses no YAML, so that
// "it does no I/O" holds of packages, not only of a function. The
// consolidation core takes a policy's node selector as an interface for
// this reason: the policy loader reads YAML.
var pure = []struct {
	name string
	pkg  string
	// reaches are packages the walk must have checked, so that a test
	// that looked at nothing cannot pass.
	reaches []string
}{
	{name: "the decision math", pkg: "internal/engine", reaches: []string{"internal/kai", "internal/usage"}},
	{name: "consolidation", pkg: "internal/consolidate", reaches: []string{"internal/engine", "internal/kai", "internal/usage"}},
	{name: "noisy neighbours", pkg: "internal/neighbours", reaches: []string{"internal/kai", "internal/metrics", "internal/usage"}},
	{name: "KAI's rules", pkg: "internal/kai"},
	{name: "usage numbers", pkg: "internal/usage"},
}

// doesIO says whether importing path brings file, network, process or YAML
// access into a package.
func doesIO(path string) bool {
	switch path {
	case "os", "io/fs", "net/http", "os/exec", "net":
		return true
	}
	return strings.Contains(path, "yaml")
}

func TestPureCoresDoNoIO(t *testing.T) {
	for _, tc := range pure {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]bool{}
			queue := []string{module + tc.pkg}
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
					if doesIO(imp) {
						t.Errorf("%s imports %s", strings.TrimPrefix(path, module), imp)
					}
					if strings.HasPrefix(imp, module) {
						queue = append(queue, imp)
					}
				}
			}
			for _, want := range append(slices.Clone(tc.reaches), tc.pkg) {
				if !seen[module+want] {
					t.Errorf("%s was not checked", want)
				}
			}
		})
	}
}
