package helm

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hang bounds what must stop at once and would otherwise run for hours:
// a minute, which a loaded 2-core machine under -race does not take to
// start, stop and wait for a render child, and which tells it from a
// render left to run.
const hang = time.Minute

// helmSeeds are the release definitions and values files of the Helm
// goldens.
func helmSeeds(f *testing.F, match func(string) bool) {
	f.Helper()
	err := filepath.WalkDir(filepath.Join("..", "testdata", "helm"), func(p string, d os.DirEntry, err error) error {
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
			rels, probs, _ := releasesIn(file, b, func(string) bool { return true })
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

// TestReleasesIn: what each kind of release definition says about the
// release: chart, name, namespace, values files in order, inline values.
func TestReleasesIn(t *testing.T) {
	charts := map[string]bool{"charts/chat": true, "apps/chat/charts/chat": true, "apps/chat/my-charts/chat-1.2.0/chat": true, "apps/chat/my-charts/embed": true}
	isChart := func(d string) bool { return charts[d] }
	type rel struct {
		Chart, Name, Namespace, Inline string
		Values                         []string
	}
	tests := []struct {
		name, file, yaml string
		want             []rel
		problem          string // in the one problem's message
	}{
		{name: "Argo CD, one source", file: "argocd/app.yaml", yaml: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: chat-prod}
spec:
  source:
    path: charts/chat/
    helm:
      valueFiles: [values-prod.yaml, ../../envs/prod.yaml]
      valuesObject: {gpu: {fraction: 0.6}}
  destination: {namespace: prod}
`, want: []rel{{Chart: "charts/chat", Name: "chat-prod", Namespace: "prod", Values: []string{"charts/chat/values-prod.yaml", "envs/prod.yaml"},
			Inline: "Application chat-prod spec.source.helm.valuesObject"}}},
		{name: "Argo CD, a chart from a Helm repository and plain manifests", file: "argocd/app.yaml", yaml: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: x}
spec:
  sources:
    - {repoURL: https://charts.example.com, chart: chat}
    - {path: manifests/chat}
    - {path: charts/chat, helm: {releaseName: chat, parameters: [{name: gpu.fraction, value: "0.4"}]}}
`, want: []rel{{Chart: "charts/chat", Name: "chat", Inline: "Application x spec.sources[2].helm"}}},
		{name: "Argo CD, a $ref to no source", file: "argocd/app.yaml", yaml: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: x}
spec:
  sources:
    - {path: charts/chat, helm: {valueFiles: [$values/envs/prod.yaml]}}
`, problem: "Application x: line 7: valueFiles: \"$values/envs/prod.yaml\" names no source ref"},
		{name: "Argo CD, $ref to another repository", file: "argocd/app.yaml", yaml: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: x}
spec:
  sources:
    - {repoURL: https://git.example.com/charts.git, path: charts/chat, helm: {valueFiles: [$values/envs/prod.yaml]}}
    - {repoURL: https://git.example.com/values.git, ref: values}
`, problem: "Application x: line 7: valueFiles: \"$values/envs/prod.yaml\" is in https://git.example.com/values.git, not in https://git.example.com/charts.git"},
		{name: "Argo CD, $ref to the chart's repository", file: "argocd/app.yaml", yaml: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: x}
spec:
  destination: {namespace: prod}
  sources:
    - {repoURL: https://git.example.com/gitops.git, path: charts/chat, helm: {valueFiles: [$values/envs/prod.yaml]}}
    - {repoURL: https://git.example.com/gitops, ref: values}
`, want: []rel{{Chart: "charts/chat", Name: "x", Namespace: "prod", Values: []string{"envs/prod.yaml"}}}},
		{name: "Flux, targetNamespace", file: "flux/hr.yaml", yaml: `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: chat, namespace: flux-system}
spec:
  targetNamespace: prod
  chart:
    spec:
      chart: ./charts/chat
      sourceRef: {kind: GitRepository, name: repo}
      valuesFiles: [./charts/chat/values-prod.yaml]
`, want: []rel{{Chart: "charts/chat", Name: "prod-chat", Namespace: "prod", Values: []string{"charts/chat/values-prod.yaml"}}}},
		{name: "Flux, a chart of a HelmRepository", file: "flux/hr.yaml", yaml: `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: chat}
spec:
  chart: {spec: {chart: charts/chat, sourceRef: {kind: HelmRepository, name: repo}}}
`},
		{name: "Flux, valuesFrom", file: "flux/hr.yaml", yaml: `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: chat}
spec:
  chart: {spec: {chart: charts/chat, sourceRef: {kind: GitRepository, name: repo}}}
  valuesFrom: [{kind: ConfigMap, name: chat-values}]
`, problem: "HelmRelease chat: spec.valuesFrom reads ConfigMaps or Secrets"},
		{name: "helmCharts, chartHome and a version", file: "apps/chat/kustomization.yaml", yaml: `
namespace: serving
helmGlobals: {chartHome: my-charts}
helmCharts:
  - {name: chat, version: 1.2.0, valuesFile: values.yaml, valuesInline: {replicas: 2}}
  - {name: embed, releaseName: b, valuesFile: values.yaml, additionalValuesFiles: [gpu.yaml], valuesMerge: override}
`, want: []rel{{Chart: "apps/chat/my-charts/chat-1.2.0/chat", Name: "chat", Namespace: "serving", Values: []string{"apps/chat/values.yaml"},
			Inline: "apps/chat/kustomization.yaml helmCharts[0].valuesInline"},
			{Chart: "apps/chat/my-charts/embed", Name: "b", Namespace: "serving", Values: []string{"apps/chat/values.yaml", "apps/chat/gpu.yaml"}}}},
		{name: "helmCharts, valuesInline below additionalValuesFiles", file: "apps/chat/kustomization.yaml", yaml: `
helmCharts:
  - {name: chat, valuesFile: values.yaml, additionalValuesFiles: [gpu.yaml], valuesInline: {replicas: 2}}
`, problem: "helmCharts[0] has valuesInline and additionalValuesFiles"},
		{name: "helmCharts, valuesMerge merge", file: "apps/chat/kustomization.yaml", yaml: `
helmCharts:
  - {name: chat, valuesFile: values.yaml, valuesInline: {replicas: 2}, valuesMerge: merge}
`, problem: "helmCharts[0].valuesMerge \"merge\": only the default override is rendered here"},
		{name: "helmCharts next to patches", file: "apps/chat/kustomization.yaml", yaml: `
helmCharts: [{name: chat}]
patches: [{path: p.yaml}]
`, problem: "line 3: patches next to helmCharts transforms what the charts render"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rs, probs, _ := releasesIn(tc.file, []byte(tc.yaml), isChart)
			var got []rel
			for _, r := range rs {
				got = append(got, rel{Chart: r.chart, Name: r.name, Namespace: r.objNamespace(""), Values: r.values, Inline: r.inlineAt})
			}
			if got2 := tc.want; len(got2) == 0 {
				if len(got) != 0 {
					t.Fatalf("got %+v, want none", got)
				}
			} else if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			switch {
			case tc.problem == "" && len(probs) > 0:
				t.Fatalf("problems: %v", probs)
			case tc.problem != "" && (len(probs) != 1 || !strings.Contains(probs[0].Error(), tc.problem) || !errors.Is(probs[0], ErrHelm)):
				t.Fatalf("problems %v, want one with %q", probs, tc.problem)
			}
		})
	}
}

// renderIndex indexes and renders the releases of an in-memory
// repository whose charts are read from files too.
func renderIndex(t *testing.T, files map[string][]byte) *Index {
	t.Helper()
	return NewIndex(context.Background(), files, func(dir string) (map[string][]byte, error) {
		out := map[string][]byte{}
		for p, b := range files {
			if strings.HasPrefix(p, dir+"/") {
				out[strings.TrimPrefix(p, dir+"/")] = b
			}
		}
		return out, nil
	}, func(string) bool { return false })
}

// miniChart is a chart at charts/c whose ConfigMap shows values a and b.
func miniChart() map[string][]byte {
	return map[string][]byte{
		"charts/c/Chart.yaml":        []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n"),
		"charts/c/values.yaml":       []byte("a: fromchart\n"),
		"charts/c/templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata:\n  a: {{ .Values.a | default \"none\" | quote }}\n  b: {{ .Values.b | default \"none\" | quote }}\n"),
		"envs/prod.yaml":             []byte("b: prod\n"),
	}
}

// TestHelmFluxValuesFiles: Flux's valuesFiles replace the chart's
// values.yaml, which is read only where they list it.
func TestHelmFluxValuesFiles(t *testing.T) {
	hr := func(name, files string) string {
		return "apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: " + name + "}\nspec:\n  chart:\n    spec:\n      chart: charts/c\n      sourceRef: {kind: GitRepository, name: repo}\n" + files
	}
	tests := []struct {
		name, spec string
		want       []string
	}{
		{"no valuesFiles", "", []string{`a: "fromchart"`, `b: "none"`}},
		{"valuesFiles", "      valuesFiles: [envs/prod.yaml]\n", []string{`a: "none"`, `b: "prod"`}},
		{"valuesFiles listing values.yaml", "      valuesFiles: [charts/c/values.yaml, envs/prod.yaml]\n", []string{`a: "fromchart"`, `b: "prod"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := miniChart()
			files["flux/hr.yaml"] = []byte(hr("c", tc.spec))
			hx := renderIndex(t, files)
			if len(hx.problems) > 0 || len(hx.releases) != 1 {
				t.Fatalf("releases %d, problems %v", len(hx.releases), hx.problems)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(hx.releases[0].out), w) {
					t.Errorf("rendered:\n%s\nwant %s", hx.releases[0].out, w)
				}
			}
		})
	}
}

// TestHelmIgnore: files the chart's .helmignore names are not part of
// the chart, as when Helm loads its directory: an ignored template is
// not rendered, nor one below an ignored directory.
func TestHelmIgnore(t *testing.T) {
	files := miniChart()
	files["charts/c/.helmignore"] = []byte("# comment\ntemplates/draft-*.yaml\nscratch/\n")
	files["charts/c/templates/draft-x.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: draft}\n")
	files["charts/c/templates/scratch/y.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: scratch}\n")
	files["charts/c/templates/scratchy.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: kept}\n")
	files["flux/hr.yaml"] = []byte("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata: {name: c}\nspec:\n  chart:\n    spec:\n      chart: charts/c\n      sourceRef: {kind: GitRepository, name: repo}\n")
	hx := renderIndex(t, files)
	if len(hx.problems) > 0 || len(hx.releases) != 1 {
		t.Fatalf("releases %d, problems %v", len(hx.releases), hx.problems)
	}
	out := string(hx.releases[0].out)
	for _, name := range []string{"draft", "scratch"} {
		if strings.Contains(out, "name: "+name+"}") {
			t.Errorf("%s is rendered, though .helmignore names it:\n%s", name, out)
		}
	}
	if !strings.Contains(out, "name: kept}") || !strings.Contains(out, "name: cm}") {
		t.Errorf("a file .helmignore does not name is not rendered:\n%s", out)
	}
}

// TestHelmTraceCap: a field whose value many values equal is refused
// without rendering once per value, naming how many.
func TestHelmTraceCap(t *testing.T) {
	files := map[string][]byte{}
	for p, b := range miniChart() {
		if rel, ok := strings.CutPrefix(p, "charts/c/"); ok {
			files[rel] = b
		}
	}
	var vals strings.Builder
	vals.WriteString("a: fromchart\n")
	for i := range 40 {
		fmt.Fprintf(&vals, "k%d: fromchart\n", i)
	}
	files["values.yaml"] = []byte(vals.String())
	r := &helmRelease{via: "test", name: "c", chart: "charts/c"}
	_, err := trace(context.Background(), newRenderer(defaultRenderLimits()).render, files, r, map[string]any{}, "fromchart", "other", nil)
	if err == nil || !strings.Contains(err.Error(), `41 values equal "fromchart": cannot tell which sets the field`) {
		t.Fatalf("got %v", err)
	}
}

// TestHelmRenderBounds: a render that runs past its context returns the
// context's error when the context ends, and output larger than a
// chart's bound is refused, naming the release.
func TestHelmRenderBounds(t *testing.T) {
	chartOf := func(tpl string) map[string][]byte {
		return map[string][]byte{
			"Chart.yaml":        []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n"),
			"templates/cm.yaml": []byte(tpl),
		}
	}
	r := &helmRelease{via: "test", name: "slow", chart: "charts/c"}
	t.Run("context", func(t *testing.T) {
		// A render of 10^10 steps, hours, and a renderer whose own bound
		// is an hour: only the context, ended after 50 ms, can stop it
		// within hang, a bound no loaded machine misses.
		lim := defaultRenderLimits()
		lim.Time = time.Hour
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := newRenderer(lim).render(ctx, chartOf("{{ range until 100000 }}{{ range until 100000 }}{{ end }}{{ end }}"), r, map[string]any{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("got %v, want the context's error", err)
		}
		if d := time.Since(start); d > hang {
			t.Fatalf("returned after %v", d)
		}
	})
	t.Run("size", func(t *testing.T) {
		_, err := newRenderer(defaultRenderLimits()).render(context.Background(), chartOf(`{{ repeat 9000000 "x" }}`), r, map[string]any{})
		if err == nil || !strings.Contains(err.Error(), "release slow renders 9000000 bytes, more than the 8388608 a file may hold") {
			t.Fatalf("got %v", err)
		}
	})
	t.Run("the run's time", func(t *testing.T) {
		// Each render stops at its own limit, and all of them at the
		// run's: the third is refused without starting.
		rd := newRenderer(renderLimits{Time: time.Second, Total: 1500 * time.Millisecond, Heap: 48 << 20, Space: 64 << 20, RSS: 1 << 30})
		slow := chartOf(`{{ range until 300 }}{{ genPrivateKey "rsa" }}{{ end }}`)
		for _, want := range []string{"rendering stopped: not done within 1s", "rendering stopped: the run's 1.5s of rendering was spent", "rendering stopped: the run's 1.5s of rendering is spent"} {
			start := time.Now()
			_, err := rd.render(context.Background(), slow, r, map[string]any{})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("got %v, want %q", err, want)
			}
			t.Logf("%v in %v", err, time.Since(start).Round(time.Millisecond))
		}
		if d := rd.spent; d < 1500*time.Millisecond || d > 5*time.Second {
			t.Fatalf("spent %v", d)
		}
	})
}

// TestUnrenderedReaders: the values files a definition that is not
// rendered here names, which are then never edited.
func TestUnrenderedReaders(t *testing.T) {
	isChart := func(d string) bool { return d == "charts/chat" }
	tests := []struct {
		name, file, yaml string
		want             []string
	}{
		{"a remote chart with a $ref values file", "argocd/app.yaml", `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: x}
spec:
  sources:
    - {repoURL: https://charts.example.com, chart: chat, helm: {valueFiles: [$values/envs/prod.yaml, values-remote.yaml]}}
    - {repoURL: https://git.example.com/gitops.git, ref: values}
`, []string{"envs/prod.yaml"}},
		{"a $ref to another repository than the chart's", "argocd/app.yaml", `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: x}
spec:
  sources:
    - {repoURL: https://git.example.com/gitops.git, path: charts/chat, helm: {valueFiles: [$values/envs/prod.yaml, values-prod.yaml]}}
    - {repoURL: https://git.example.com/other.git, ref: values}
`, []string{"charts/chat/values.yaml", "charts/chat/values-prod.yaml"}},
		{"a rendered release", "argocd/app.yaml", `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: x}
spec:
  source: {path: charts/chat, helm: {valueFiles: [values-prod.yaml]}}
`, nil},
		{"Flux valuesFrom", "flux/hr.yaml", `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: chat}
spec:
  chart: {spec: {chart: charts/chat, sourceRef: {kind: GitRepository, name: repo}, valuesFiles: [envs/a.yaml]}}
  valuesFrom: [{kind: ConfigMap, name: chat-values}]
`, []string{"charts/chat/values.yaml", "envs/a.yaml"}},
		{"helmCharts next to resources", "apps/kustomization.yaml", `
resources: [x.yaml]
helmCharts: [{name: chat, valuesFile: v.yaml}]
`, []string{"apps/charts/chat/values.yaml", "apps/v.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, unr := releasesIn(tc.file, []byte(tc.yaml), isChart)
			var got []string
			for _, u := range unr {
				got = append(got, u.paths...)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestHelmRenderHostile: templates that would exhaust memory or run for
// ever stop at the render child's bounds, each with an error that says
// which, in bounded time; a chart that renders still does, in the child.
func TestHelmRenderHostile(t *testing.T) {
	chartOf := func(tpl string) map[string][]byte {
		return map[string][]byte{
			"Chart.yaml":         []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n"),
			"templates/cm.yaml":  []byte(tpl),
			"templates/_lib.tpl": []byte(`{{ define "a0" }}x{{ end }}` + nested(40)),
		}
	}
	lim := renderLimits{Time: 1500 * time.Millisecond, Total: time.Minute, Heap: 48 << 20, Space: 64 << 20, RSS: 1 << 30}
	r := &helmRelease{via: "test", name: "hostile", chart: "charts/c"}
	// One renderer for all: after a render stopped at a bound, the next
	// gets a new child.
	rd := newRenderer(lim)
	tests := []struct {
		name, tpl, want string
	}{
		{"a billion iterations", `{{ range until 1000000000 }}x{{ end }}`, "rendering stopped"},
		{"a two-gigabyte string", `{{ repeat 2000000000 "x" }}`, "rendering stopped"},
		{"forty levels of double include", `{{ include "a40" . }}`, "rendering stopped: not done within 1.5s"},
		{"three hundred private keys", `{{ range until 300 }}{{ genPrivateKey "rsa" }}{{ end }}`, "rendering stopped: not done within 1.5s"},
		{"recursive tpl", `{{ define "r" }}{{ tpl "{{ include \"r\" . }}" . }}{{ end }}{{ include "r" . }}`, "rendering stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, err := rd.render(context.Background(), chartOf(tt.tpl), r, map[string]any{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if d := time.Since(start); d > lim.Time+hang {
				t.Fatalf("returned after %v", d)
			}
			t.Logf("%v in %v", err, time.Since(start).Round(time.Millisecond))
		})
	}
	t.Run("a chart that renders", func(t *testing.T) {
		// The same renderer, so a new child follows the stopped ones; but
		// a bound a loaded machine cannot miss: starting that child and
		// rendering took over 1.5 s at a load of 25.
		rd.lim.Time = hang
		out, err := rd.render(context.Background(), chartOf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ .Release.Name }}}\ndata: {v: {{ .Values.v | quote }}}\n"),
			r, map[string]any{"v": int64(7)})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), `name: hostile`) || !strings.Contains(string(out), `v: "7"`) {
			t.Fatalf("got %s", out)
		}
	})
}

// TestHelmChildMemory: a template that allocates at once far more than
// the child may have is stopped by the kernel before the memory is
// taken, with the defaults the chart's memory limit makes room for: the
// child never grows more than RenderMemory and one heap arena beyond a
// child that rendered a small chart (its resident size counts the
// program's code too, shared with the tool's). The resident-size backstop would let it reach a gigabyte.
// The huge string is tried five times over: under RLIMIT_DATA about one
// render in eleven got past the kernel (see limitSpace).
func TestHelmChildMemory(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the kernel's bound on a child's memory is Linux's")
	}
	if raceDetector {
		t.Skip("the race detector's shadow memory counts against the kernel's bound, which is then not set")
	}
	chartOf := func(tpl string) map[string][]byte {
		return map[string][]byte{
			"Chart.yaml":        []byte("apiVersion: v2\nname: c\nversion: 0.1.0\n"),
			"templates/cm.yaml": []byte(tpl),
		}
	}
	r := &helmRelease{via: "test", name: "hostile", chart: "charts/c"}
	// What a child holds once it has rendered a small chart: the program's
	// code and runtime, which its resident size counts too.
	base := newRenderer(defaultRenderLimits())
	if _, err := base.render(context.Background(), chartOf("a: b\n"), r, map[string]any{}); err != nil {
		t.Fatal(err)
	}
	if base.child == nil {
		t.Fatal("the child of a small render ended before it was measured")
	}
	base.kill(base.child)
	rd := newRenderer(defaultRenderLimits())
	huge := `{{ repeat 600000000 "x" }}`
	for _, tpl := range []string{huge, huge, huge, huge, huge, `{{ repeat 2000000000 "x" }}`, `{{ $s := list }}{{ range until 10000000 }}{{ $s = append $s "xxxxxxxx" }}{{ end }}`} {
		t.Run(tpl, func(t *testing.T) {
			_, err := rd.render(context.Background(), chartOf(tpl), r, map[string]any{})
			// "of memory": the kernel's bound or the heap watcher, not
			// the resident-size backstop.
			if err == nil || !regexp.MustCompile(`rendering stopped: more than \d+ MiB of memory`).MatchString(err.Error()) {
				t.Fatalf("got %v, want a memory bound", err)
			}
			t.Logf("%v; peak resident %d MiB", err, rd.peak>>20)
		})
	}
	// RLIMIT_AS counts the address space the child reserved at its start:
	// a heap arena (64 MiB on 64-bit Linux) it had not yet touched can
	// become resident without growing it. An absolute bound of 192 MiB
	// failed 2 runs in 6 at a child start of 51 MiB; growth was 93-146.
	if growth, max := rd.peak-base.peak, int64(RenderMemory+64<<20); growth > max {
		t.Fatalf("a child grew %d MiB resident beyond a small render's %d MiB, more than %d MiB", growth>>20, base.peak>>20, max>>20)
	}
	out, err := rd.render(context.Background(), chartOf("a: {{ repeat 1000 \"x\" }}\n"), r, map[string]any{})
	if err != nil || len(out) < 1000 {
		t.Fatalf("after the bound, a chart that renders: %v", err)
	}
}

// TestMemoryRefused: each way the Go runtime words a refused mapping is
// the memory bound; other fatal errors are not, and the failure names the
// runtime's line.
func TestMemoryRefused(t *testing.T) {
	tests := []struct {
		stderr string
		memory bool
		line   string
	}{
		{"runtime: out of memory: cannot allocate 603979776-byte block (3997696 in use)\nfatal error: out of memory\n", true, "fatal error: out of memory"},
		{"fatal error: runtime: cannot allocate memory\n", true, "fatal error: runtime: cannot allocate memory"},
		{"runtime: failed to create new OS thread (have 5 already; errno=12)\nruntime: may need to increase max user processes (ulimit -u)\nfatal error: newosproc\n", true, "fatal error: newosproc"},
		{"runtime/cgo: pthread_create failed: Resource temporarily unavailable\nSIGABRT: abort\n", true, "runtime/cgo: pthread_create failed: Resource temporarily unavailable"},
		{"fatal error: concurrent map writes\n", false, "fatal error: concurrent map writes"},
		{"panic: boom\n\ngoroutine 1 [running]:\n", false, "panic: boom"},
		{"SIGSEGV: segmentation violation\nPC=0x437efd m=2 sigcode=1 addr=0x0\n", false, "SIGSEGV: segmentation violation"},
		{"", false, ""},
	}
	for _, tt := range tests {
		if got := memoryRefused(tt.stderr); got != tt.memory {
			t.Errorf("memoryRefused(%q) = %v, want %v", tt.stderr, got, tt.memory)
		}
		if got := fatalLine(tt.stderr); got != tt.line {
			t.Errorf("fatalLine(%q) = %q, want %q", tt.stderr, got, tt.line)
		}
	}
}

// TestHelmRunBudget: slow releases that each render within their own
// limit cannot outlast the job together: past the run's budget each is a
// problem naming it, and the renders after are not started.
func TestHelmRunBudget(t *testing.T) {
	files := map[string][]byte{
		"charts/slow/Chart.yaml":        []byte("apiVersion: v2\nname: slow\nversion: 0.1.0\n"),
		"charts/slow/templates/cm.yaml": []byte(`{{ range until 300 }}{{ genPrivateKey "rsa" }}{{ end }}`),
	}
	for i := range 5 {
		files[fmt.Sprintf("argocd/app%d.yaml", i)] = []byte(fmt.Sprintf("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: app%d}\nspec:\n  source: {path: charts/slow}\n", i))
	}
	tree := func(dir string) (map[string][]byte, error) {
		out := map[string][]byte{}
		for p, b := range files {
			if rel, ok := strings.CutPrefix(p, dir+"/"); ok {
				out[rel] = b
			}
		}
		return out, nil
	}
	start := time.Now()
	rd := newRenderer(renderLimits{Time: time.Second, Total: 2500 * time.Millisecond, Heap: 48 << 20, Space: 64 << 20, RSS: 1 << 30})
	hx := newIndex(context.Background(), files, tree, func(string) bool { return false }, rd)
	var got []string
	for _, p := range hx.problems {
		got = append(got, p.Error())
	}
	// Which release meets which bound depends on how long each child
	// took to start, so only the order is fixed: the first render meets
	// its own bound; once the run's budget ran out mid-render, every
	// later release is refused before it starts.
	const (
		own     = "not done within 1s"
		ranOut  = "the run's 2.5s of rendering was spent"
		isSpent = "the run's 2.5s of rendering is spent"
	)
	if len(got) != 5 {
		t.Fatalf("got %d problems, want one for each of 5 releases:\n%s", len(got), strings.Join(got, "\n"))
	}
	stage := 0 // 0: own bounds, 1: budget ran out, 2: budget spent
	for i, g := range got {
		prefix := fmt.Sprintf("argocd/app%d.yaml:1: helm: Application app%d: chart charts/slow: rendering stopped: ", i, i)
		why, ok := strings.CutPrefix(g, prefix)
		next := map[string]int{own: 0, ranOut: 1, isSpent: 2}[why]
		if !ok || (why != own && next == 0) || next < stage {
			t.Fatalf("problem %d is %q, out of order:\n%s", i, g, strings.Join(got, "\n"))
		}
		stage = next
	}
	if !strings.HasSuffix(got[0], own) || !strings.HasSuffix(got[len(got)-1], isSpent) {
		t.Fatalf("want the first release stopped at its own bound and the last refused:\n%s", strings.Join(got, "\n"))
	}
	if d := time.Since(start); d > hang {
		t.Fatalf("took %v", d)
	}
}

// TestReleasePathLeaves: a release whose chart path climbs out of the
// repository is a problem naming it, not a source silently skipped.
func TestReleasePathLeaves(t *testing.T) {
	tests := []struct {
		name, file, yaml, want string
	}{
		{"Argo CD", "argocd/app.yaml", `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: x}
spec:
  source: {repoURL: https://git.example.com/gitops.git, path: ../charts/chat}
`, `argocd/app.yaml:2: helm: Application x: line 6: path "../charts/chat" leaves the repository: not rendered`},
		{"Flux", "flux/hr.yaml", `
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: chat}
spec:
  chart: {spec: {chart: ./../../chat, sourceRef: {kind: GitRepository, name: repo}}}
`, `flux/hr.yaml:2: helm: HelmRelease chat: spec.chart.spec.chart "./../../chat" leaves the source: not rendered`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rels, probs, _ := releasesIn(tc.file, []byte(tc.yaml), func(string) bool { return true })
			if len(rels) != 0 || len(probs) != 1 || probs[0].Error() != tc.want {
				t.Fatalf("got %d releases, problems %v; want %q", len(rels), probs, tc.want)
			}
		})
	}
}

// nested defines a1 … an, each including the one below twice: 2^n calls.
func nested(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{{ define "a%d" }}{{ include "a%d" . }}{{ include "a%d" . }}{{ end }}`, i, i-1, i-1)
	}
	return b.String()
}
