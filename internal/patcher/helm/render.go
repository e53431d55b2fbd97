package helm

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader/archive"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"helm.sh/helm/v4/pkg/engine"
	"helm.sh/helm/v4/pkg/ignore"
	"helm.sh/helm/v4/pkg/strvals"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
)

// Rendering with the Helm Go SDK, as `helm template` does, in memory:
// the chart is loaded from the files the checkout holds, its
// dependencies must be vendored in its charts/ directory (nothing is ever
// fetched), the values schema is not checked (a schema may $ref a URL),
// and lookup finds nothing (there is no cluster).

// valuesLayer is one source of a release's values.
type valuesLayer struct {
	file   string // a values file, from the root; "" for inline values
	inline string // where inline values are written
	vals   map[string]any
}

func (l valuesLayer) name() string {
	if l.file != "" {
		return l.file
	}
	return l.inline
}

// loadValues reads a values file as Helm does ("" is no values).
func loadValues(b []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return map[string]any{}, nil
	}
	return loader.LoadValues(bytes.NewReader(b))
}

// mergeValues merges b over a, maps key by key, as Helm merges values
// files; either may be nil.
func mergeValues(a, b map[string]any) map[string]any {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	return loader.MergeMaps(a, b)
}

// setValues reads one --set style assignment (Argo CD's helm.parameters).
func setValues(s string) (map[string]any, error) {
	v := map[string]any{}
	if err := strvals.ParseInto(s, v); err != nil {
		return nil, err
	}
	return v, nil
}

// userValues are what Helm is given above the chart's own values.yaml:
// every layer but the first, merged in order.
func userValues(ls []valuesLayer) map[string]any {
	out := map[string]any{}
	for _, l := range ls[1:] {
		out = loader.MergeMaps(out, l.vals)
	}
	return out
}

// loadChart loads a chart from its files (paths relative to its
// directory) and checks that its dependencies are vendored.
func loadChart(files map[string][]byte) (*chart.Chart, error) {
	rules := ignore.Empty()
	if b, ok := files[ignore.HelmIgnore]; ok {
		r, err := ignore.Parse(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ignore.HelmIgnore, err)
		}
		rules = r
	}
	rules.AddDefaults()
	names := make([]string, 0, len(files))
	for n := range files {
		if !helmIgnored(rules, n) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	bf := make([]*archive.BufferedFile, 0, len(names))
	for _, n := range names {
		bf = append(bf, &archive.BufferedFile{Name: n, Data: files[n]})
	}
	ch, err := loader.LoadFiles(bf)
	if err != nil {
		return nil, err
	}
	if err := ch.Validate(); err != nil {
		return nil, err
	}
	if ch.Metadata != nil {
		for _, d := range ch.Metadata.Dependencies {
			if d == nil {
				continue
			}
			if !slices.ContainsFunc(ch.Dependencies(), func(c *chart.Chart) bool { return c.Name() == d.Name }) {
				return nil, fmt.Errorf("dependency %s is not vendored in its charts/ directory (dependencies are never fetched: run helm dependency build and commit the result)", d.Name)
			}
		}
	}
	return ch, nil
}

// helmIgnored reports whether the chart's .helmignore rules leave file n
// (slash-separated, relative to the chart) out, as Helm's loader does
// when it walks a chart directory: a file below an ignored directory is
// left out too.
func helmIgnored(rules *ignore.Rules, n string) bool {
	parts := strings.Split(n, "/")
	for i := 1; i < len(parts); i++ {
		if rules.Ignore(strings.Join(parts[:i], "/"), memInfo{name: parts[i-1], dir: true}) {
			return true
		}
	}
	return rules.Ignore(n, memInfo{name: parts[len(parts)-1]})
}

// memInfo is the fs.FileInfo of a chart file held in memory: the
// .helmignore rules look at the name and whether it is a directory.
type memInfo struct {
	name string
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return 0 }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }

// renderSync renders the chart of files as release r with user values
// vals, and returns the manifests as one stream, each document headed by
// the template it came from, in the order of the template names. It runs
// in this process with no bound: the render child's work (child.go),
// since the templates are the repository's programs.
func renderSync(ctx context.Context, files map[string][]byte, r *helmRelease, vals map[string]any) (out []byte, err error) {
	defer func() {
		// The engine runs the repository's templates: a panic in it is a
		// chart that does not render, not the end of the run.
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("rendering panicked: %v", p)
		}
	}()
	ch, err := loadChart(files)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", r.chart, err)
	}
	if err := chartutil.ProcessDependencies(ch, vals); err != nil {
		return nil, fmt.Errorf("chart %s: %w", r.chart, err)
	}
	opts := common.ReleaseOptions{Name: r.name, Namespace: cmpOr(r.namespace, "default"), Revision: 1, IsInstall: true}
	top, err := util.ToRenderValuesWithSchemaValidation(ch, vals, opts, nil, true)
	if err != nil {
		return nil, fmt.Errorf("chart %s: values: %w", r.chart, err)
	}
	// No client (lookup finds nothing) and no DNS (getHostByName returns
	// ""): rendering reads nothing but the chart and its values.
	rendered, err := engine.Engine{EnableDNS: false}.RenderWithContext(ctx, ch, top)
	if err != nil {
		return nil, fmt.Errorf("chart %s: %w", r.chart, err)
	}
	names := make([]string, 0, len(rendered))
	for n := range rendered {
		base := path.Base(n)
		if strings.HasPrefix(base, "_") || base == "NOTES.txt" || strings.TrimSpace(rendered[n]) == "" {
			continue
		}
		names = append(names, n)
	}
	sort.Strings(names)
	// What a release renders is held, parsed and rendered again per
	// candidate value: bounded like a file of the checkout.
	size := 0
	for _, n := range names {
		size += len(rendered[n])
	}
	if size > checkout.MaxFileSize {
		return nil, fmt.Errorf("release %s renders %d bytes, more than the %d a file may hold", r.name, size, checkout.MaxFileSize)
	}
	var b bytes.Buffer
	for _, n := range names {
		fmt.Fprintf(&b, "---\n# Source: %s\n%s\n", n, strings.TrimRight(rendered[n], "\n"))
	}
	return b.Bytes(), nil
}
