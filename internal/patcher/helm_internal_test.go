package patcher

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

// helmSeeds are the release definitions and values files of the Helm
// goldens.
func helmSeeds(f *testing.F, match func(string) bool) {
	f.Helper()
	err := filepath.WalkDir(filepath.Join("testdata", "helm"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !match(p) {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil {
			f.Add(b)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
}

// FuzzHelmReleases feeds arbitrary YAML to the reader of release
// definitions (Argo CD Applications, Flux HelmReleases, helmCharts) as
// a manifest and as a kustomization. It must never panic; every release
// it reads names a chart and values files inside the checkout, and every
// problem names the file and wraps ErrHelm.
func FuzzHelmReleases(f *testing.F) {
	helmSeeds(f, func(p string) bool {
		return strings.Contains(p, "/original/") && (strings.Contains(p, "argocd") || strings.Contains(p, "clusters") || path.Base(p) == "kustomization.yaml")
	})
	f.Add([]byte("apiVersion: argoproj.io/v1alpha1\nkind: Application\nspec:\n  sources:\n  - ref: r\n  - path: c\n    helm: {valueFiles: [$r/../x], parameters: [{name: 'a[0].b', value: '1'}]}\n"))
	f.Add([]byte("helmCharts:\n- name: c\n  valuesInline: {a: 1}\n  valuesFile: /etc/passwd\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, file := range []string{"apps/app.yaml", "apps/kustomization.yaml"} {
			rels, probs := releasesIn(file, b, func(string) bool { return true })
			for _, r := range rels {
				if r.chart == "" || escapes(r.chart) {
					t.Fatalf("%s: chart %q", file, r.chart)
				}
				for _, v := range r.values {
					if v == "" || escapes(v) || path.Clean(v) != v {
						t.Fatalf("%s: values file %q", file, v)
					}
				}
				if r.file != file || r.via == "" {
					t.Fatalf("release %+v", r)
				}
			}
			for _, p := range probs {
				if p.File != file || !errors.Is(p, ErrHelm) {
					t.Fatalf("problem %v", p)
				}
			}
		}
	})
}

// escapes reports whether slash path p leaves the root.
func escapes(p string) bool {
	p = path.Clean(p)
	return path.IsAbs(p) || p == ".." || strings.HasPrefix(p, "../")
}

// FuzzHelmValues feeds arbitrary values files to the tracer's walk of
// values: every scalar it finds for a text is where it says, prints as
// that text, and is set by the only layer.
func FuzzHelmValues(f *testing.F) {
	helmSeeds(f, func(p string) bool { return strings.Contains(path.Base(p), "values") })
	f.Add([]byte("a: [1, {b: 0.5}, [\"0.5\"]]\nc: {d: 0.50}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := loadValues(b)
		if err != nil {
			return
		}
		ls := []valuesLayer{{file: "values.yaml", vals: v}}
		for _, text := range []string{"0.5", "1", "true", ""} {
			for _, p := range leavesEqual(v, text) {
				got, ok := getValue(v, p)
				if !ok {
					t.Fatalf("%s: not found", p)
				}
				if s, _ := scalarText(got); strings.TrimSpace(s) != text {
					t.Fatalf("%s: %v is not %q", p, got, text)
				}
				if w := winner(ls, p); w != 0 {
					t.Fatalf("%s: winner %d", p, w)
				}
				c := deepCopy(v)
				if !setValue(c, p, "x") {
					t.Fatalf("%s: not set", p)
				}
				if got, _ := getValue(c, p); got != "x" {
					t.Fatalf("%s: set to %v", p, got)
				}
			}
		}
	})
}
