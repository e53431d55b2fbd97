package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/patcher/kustomize"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Helm. A chart kept in the repository is deployed as what Helm renders
// of it for each release that names it: an Argo CD Application whose
// source path is the chart, a Flux HelmRelease whose chart is a path of a
// GitRepository, or a kustomization's helmCharts entry. Discovery renders
// every release with the Helm Go SDK, in memory and offline, and reports
// the workloads it renders under their rendered identity (the release
// namespace filled in). A chart no release names is not rendered: which
// release name, namespace and values it would be deployed with is not
// known, and a guess would attribute usage to names no cluster has; it is
// listed in Inventory.Unreleased. Editing goes to the values file that
// sets the value, traced by rendering (trace.go, edit.go).

// ErrHelm: a release does not render, or an edit of what it renders
// cannot be traced to a value, placed or proven.
var ErrHelm = errors.New("helm")

// Index is every chart of a repository that a release renders, with
// the releases and what they render.
type Index struct {
	// rd renders the releases, in a child process within bounds.
	rd       *renderer
	files    map[string][]byte // the checkout's YAML files, values files among them
	charts   map[string]*helmChart
	releases []*helmRelease
	// kusts are kustomizations whose objects are only helmCharts: they
	// are rendered here, and what kustomize says of them is dropped.
	kusts map[string]bool
	// included reports whether a kustomization is included by another:
	// a release it defines is not rendered.
	included func(file string) bool
	// Unreleased are the chart directories no release renders.
	Unreleased []string
	// problems are releases that do not render, and release definitions
	// that cannot be read.
	problems []workload.Problem
	// unrendered are the definitions that name values files (or a
	// chart's values.yaml) but are not rendered here: skipped (a remote
	// chart) or reported. What they render from those files is not
	// known, so an edit of one of them is refused.
	unrendered []valuesReader
}

// valuesReader is a definition that is not rendered here, and the values
// files it names, from the root.
type valuesReader struct {
	via   string
	file  string
	line  int
	paths []string
}

// helmChart is one chart directory and its files.
type helmChart struct {
	dir   string
	files map[string][]byte // every file below dir, by path relative to it
	err   error
}

// helmRelease is one rendering of a chart.
type helmRelease struct {
	file string // the file that defines the release
	line int
	doc  int // index of the defining document in file
	// src is the index of the source (Argo CD) or helmCharts entry
	// (kustomize) within the document that defines it, 0 for Flux.
	src int
	// via says what defines it, for messages: "Application chat-prod".
	via             string
	name, namespace string
	chart           string // directory, from the root
	// values are the values files, from the root, lowest precedence
	// first; the chart's own values.yaml comes before all of them.
	values []string
	// inline are values written in the release definition itself, above
	// every file; inlineAt names where. inlinePath, when they are all
	// one YAML mapping of the definition's document (Flux spec.values,
	// Argo CD valuesObject, valuesInline), is its path there: such
	// values are edited like a values file.
	inline     map[string]any
	inlineAt   string
	inlinePath valuePath
	// ignoreMissing: a values file that is not there is skipped (Argo
	// CD's ignoreMissingValueFiles).
	ignoreMissing bool
	// noDefault: the chart's values.yaml is not its base values (Flux
	// valuesFiles replace it unless they list it).
	noDefault bool
	// nsOverride is a kustomization's namespace:, which kustomize sets on
	// every rendered object.
	nsOverride string
	out        []byte // the rendered stream
	objs       []hobj
	err        error
}

// hobj is one workload a release renders.
type hobj struct {
	w   workload.Workload // as rendered; File is the release's file
	doc int               // index of its document in out
	// rendered is its identity in what the chart renders, before the
	// release's namespace fills it in: a workload, or the service of a
	// DynamoGraphDeployment, of that document.
	rendered usage.Ref
}

// uses reports whether rendering r reads file p (a path from the root).
func (r *helmRelease) uses(p string) bool {
	return inDir(p, r.chart) || slices.Contains(r.values, p) || p == r.file
}

// screenRelease reports whether a file may define a release: the cheap
// test that spares parsing the files that cannot (habit 6).
func screenRelease(b []byte) bool {
	return bytes.Contains(b, []byte("Application")) || bytes.Contains(b, []byte("HelmRelease")) ||
		bytes.Contains(b, []byte("helmCharts"))
}

// chartDirs returns the directories holding a Chart.yaml, except the
// subcharts vendored below another chart's charts/ directory.
func chartDirs(files map[string][]byte) []string {
	var dirs []string
	for p := range files {
		if path.Base(p) == "Chart.yaml" {
			dirs = append(dirs, path.Dir(p))
		}
	}
	sort.Strings(dirs)
	var out []string
	for _, d := range dirs {
		sub := false
		for _, o := range out {
			if inDir(d, path.Join(o, "charts")) {
				sub = true
			}
		}
		if !sub {
			out = append(out, d)
		}
	}
	return out
}

// releasesIn reads the releases that file b defines. isChart says
// whether a directory (from the root) is a chart of the checkout: a
// source that names anything else (plain manifests, a Helm repository's
// chart) is not a release rendered here, and is not reported. Problems
// are definitions that name a chart of the checkout but cannot be read.
func releasesIn(file string, b []byte, isChart func(string) bool) ([]*helmRelease, []workload.Problem, []valuesReader) {
	s, err := splice.Parse(b)
	if err != nil {
		return nil, nil, nil // discoverFile reports it
	}
	var rels []*helmRelease
	var probs []workload.Problem
	var unr []valuesReader
	for di, doc := range s.Docs {
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		root := doc.Content[0]
		api, kind := splice.Str(root, "apiVersion"), splice.Str(root, "kind")
		var rs []*helmRelease
		var err error
		switch {
		case kind == "Application" && strings.HasPrefix(api, "argoproj.io/"):
			rs, err = argoReleases(root, isChart)
		case kind == "HelmRelease" && strings.HasPrefix(api, "helm.toolkit.fluxcd.io/"):
			rs, err = fluxRelease(root, isChart)
		case kustomize.IsKustomization(file) && splice.Lookup(root, "helmCharts") != nil:
			rs, err = kustReleases(file, root, isChart)
		}
		rendered := map[int]bool{}
		if err == nil {
			for _, r := range rs {
				rendered[r.src] = true
			}
		}
		for _, e := range namedValues(file, root, api, kind) {
			if !rendered[e.src] && len(e.paths) > 0 {
				unr = append(unr, valuesReader{via: e.via, file: file, line: doc.Line, paths: e.paths})
			}
		}
		if err != nil {
			if kind == "Application" || kind == "HelmRelease" {
				err = fmt.Errorf("%s %s: %w", kind, splice.Str(splice.Lookup(root, "metadata"), "name"), err)
			}
			probs = append(probs, workload.Problem{File: file, Line: doc.Line, Err: fmt.Errorf("%w: %w", ErrHelm, err)})
			continue
		}
		for _, r := range rs {
			r.file, r.line, r.doc = file, doc.Line, di
			rels = append(rels, r)
		}
	}
	return rels, probs, unr
}

// namedEntry is one source, HelmRelease or helmCharts entry of a
// definition and the values files it names.
type namedEntry struct {
	src   int
	via   string
	paths []string
}

// namedValues reads leniently every values file (from the root) that
// each entry of a release definition names, whether or not it is
// rendered here: a values file of a remote chart's source ($ref/...), of
// a definition that is reported, the values.yaml of a chart it names.
// Paths that leave the checkout or name other repositories' files are
// left out: they are not files of the checkout.
func namedValues(file string, root *yaml.Node, api, kind string) []namedEntry {
	local := func(p string) bool {
		if p == "" {
			return false
		}
		p = path.Clean(p)
		return p != "." && !strings.Contains(p, "://") && !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../")
	}
	var out []namedEntry
	switch {
	case kind == "Application" && strings.HasPrefix(api, "argoproj.io/"):
		name := splice.Str(splice.Lookup(root, "metadata"), "name")
		nodes, _ := argoSourceNodes(root)
		srcs := make([]argoSource, len(nodes))
		refs := map[string]string{}
		for i, n := range nodes {
			_ = n.Decode(&srcs[i]) // lenient: what decodes is taken
			if srcs[i].Ref != "" {
				refs[srcs[i].Ref] = srcs[i].RepoURL
			}
		}
		for i, s := range srcs {
			e := namedEntry{src: i, via: fmt.Sprintf("Application %s source %d", name, i)}
			if s.Path != "" && s.Chart == "" {
				if p := path.Join(path.Clean(s.Path), "values.yaml"); local(p) {
					e.paths = append(e.paths, p)
				}
			}
			for _, vf := range s.Helm.ValueFiles {
				var p string
				switch {
				case strings.HasPrefix(vf, "$"):
					// A file of another repository than the chart's
					// is not a file of the checkout.
					ref, rest, _ := strings.Cut(strings.TrimPrefix(vf, "$"), "/")
					if repo, ok := refs[ref]; ok && s.Chart == "" && !sameRepo(repo, s.RepoURL) {
						continue
					}
					p = path.Clean(rest)
				case s.Path != "" && s.Chart == "":
					p = path.Join(path.Clean(s.Path), vf)
				}
				if local(p) {
					e.paths = append(e.paths, p)
				}
			}
			out = append(out, e)
		}
	case kind == "HelmRelease" && strings.HasPrefix(api, "helm.toolkit.fluxcd.io/"):
		var spec fluxHelmRelease
		_ = decode(splice.Lookup(root, "spec"), "spec", &spec)
		cs := spec.Chart.Spec
		e := namedEntry{via: "HelmRelease " + splice.Str(splice.Lookup(root, "metadata"), "name")}
		if cs.Chart != "" {
			if p := path.Join(path.Clean(strings.TrimPrefix(cs.Chart, "/")), "values.yaml"); local(p) {
				e.paths = append(e.paths, p)
			}
		}
		for _, vf := range append([]string{cs.ValuesFile}, cs.ValuesFiles...) {
			if p := path.Clean(strings.TrimPrefix(vf, "/")); vf != "" && local(p) {
				e.paths = append(e.paths, p)
			}
		}
		out = append(out, e)
	case kustomize.IsKustomization(file) && splice.Lookup(root, "helmCharts") != nil:
		dir := path.Dir(file)
		var globals struct {
			ChartHome string `yaml:"chartHome"`
		}
		_ = decode(splice.Lookup(root, "helmGlobals"), "helmGlobals", &globals)
		home := path.Join(dir, cmpOr(globals.ChartHome, "charts"))
		seq := splice.Lookup(root, "helmCharts")
		if seq.Kind != yaml.SequenceNode {
			return nil
		}
		for i, n := range seq.Content {
			var hc struct {
				Name                  string   `yaml:"name"`
				Version               string   `yaml:"version"`
				ValuesFile            string   `yaml:"valuesFile"`
				AdditionalValuesFiles []string `yaml:"additionalValuesFiles"`
			}
			_ = n.Decode(&hc)
			e := namedEntry{src: i, via: fmt.Sprintf("%s helmCharts[%d]", file, i)}
			if hc.Name != "" {
				e.paths = append(e.paths, path.Join(home, hc.Name, "values.yaml"))
				if hc.Version != "" {
					e.paths = append(e.paths, path.Join(home, hc.Name+"-"+hc.Version, hc.Name, "values.yaml"))
				}
			}
			for _, vf := range append([]string{hc.ValuesFile}, hc.AdditionalValuesFiles...) {
				if p := path.Join(dir, vf); vf != "" && !path.IsAbs(vf) && local(p) {
					e.paths = append(e.paths, p)
				}
			}
			out = append(out, e)
		}
	}
	return out
}

// argoSourceNodes are the sources of an Application, and whether they
// are spec.sources: Argo CD ignores spec.source when spec.sources is not
// empty.
func argoSourceNodes(root *yaml.Node) ([]*yaml.Node, bool) {
	if n := splice.Lookup(root, "spec", "sources"); n != nil && n.Kind == yaml.SequenceNode && len(n.Content) > 0 {
		return n.Content, true
	}
	if n := splice.Lookup(root, "spec", "source"); n != nil {
		return []*yaml.Node{n}, false
	}
	return nil, false
}

// decode decodes node n into v, naming the field on failure.
func decode(n *yaml.Node, field string, v any) error {
	if n == nil {
		return nil
	}
	if err := n.Decode(v); err != nil {
		return fmt.Errorf("line %d: %s: %w", n.Line, field, err)
	}
	return nil
}

// inlineValues reads a mapping of values written in a release
// definition as Helm reads a values file.
func inlineValues(n *yaml.Node, field string) (map[string]any, error) {
	if n == nil || n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("line %d: %s is not a mapping", n.Line, field)
	}
	b, err := yaml.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("line %d: %s: %w", n.Line, field, err)
	}
	v, err := loadValues(b)
	if err != nil {
		return nil, fmt.Errorf("line %d: %s: %w", n.Line, field, err)
	}
	return v, nil
}

// argoSource is what the editor reads of an Argo CD Application source.
type argoSource struct {
	RepoURL string `yaml:"repoURL"`
	Path    string `yaml:"path"`
	Chart   string `yaml:"chart"`
	Ref     string `yaml:"ref"`
	Helm    struct {
		ReleaseName             string   `yaml:"releaseName"`
		Namespace               string   `yaml:"namespace"`
		ValueFiles              []string `yaml:"valueFiles"`
		IgnoreMissingValueFiles bool     `yaml:"ignoreMissingValueFiles"`
		Values                  string   `yaml:"values"`
		Parameters              []struct {
			Name  string `yaml:"name"`
			Value string `yaml:"value"`
		} `yaml:"parameters"`
		FileParameters []any `yaml:"fileParameters"`
	} `yaml:"helm"`
}

// argoReleases reads an Argo CD Application: each source whose path is a
// chart of the checkout is a release. Argo CD names the release after the
// Application unless helm.releaseName says otherwise, and renders into
// the destination namespace. valueFiles are relative to the source path;
// $name/ starts a path at the root of the source whose ref is name (taken
// to be this repository).
func argoReleases(root *yaml.Node, isChart func(string) bool) ([]*helmRelease, error) {
	name := splice.Str(splice.Lookup(root, "metadata"), "name")
	ns := splice.Str(splice.Lookup(root, "spec", "destination"), "namespace")
	nodes, multi := argoSourceNodes(root)
	srcs := make([]argoSource, len(nodes))
	refs := map[string]string{} // ref: its source's repository
	for i, n := range nodes {
		if err := decode(n, "spec.source", &srcs[i]); err != nil {
			return nil, err
		}
		if srcs[i].Ref != "" {
			refs[srcs[i].Ref] = srcs[i].RepoURL
		}
	}
	var out []*helmRelease
	for i, s := range srcs {
		dir := path.Clean(s.Path)
		if s.Chart == "" && s.Path != "" && leaves(dir) {
			// Not a directory of this repository, nor of any: said, so
			// that what it deploys is not silently missing.
			return nil, fmt.Errorf("line %d: path %q leaves the repository: not rendered", nodes[i].Line, s.Path)
		}
		if s.Chart != "" || s.Path == "" || !isChart(dir) {
			continue
		}
		h := s.Helm
		r := &helmRelease{via: "Application " + name, name: cmpOr(h.ReleaseName, name), namespace: cmpOr(h.Namespace, ns), chart: dir, src: i}
		for _, vf := range h.ValueFiles {
			p := path.Join(dir, vf)
			if strings.HasPrefix(vf, "$") {
				ref, rest, _ := strings.Cut(strings.TrimPrefix(vf, "$"), "/")
				repo, ok := refs[ref]
				if !ok {
					return nil, fmt.Errorf("line %d: valueFiles: %q names no source ref", nodes[i].Line, vf)
				}
				// The checkout is the chart's repository: a file of
				// another one is not here, whatever its path.
				if !sameRepo(repo, s.RepoURL) {
					return nil, fmt.Errorf("line %d: valueFiles: %q is in %s, not in %s, the chart's repository read here", nodes[i].Line, vf, repo, s.RepoURL)
				}
				p = path.Clean(rest)
			}
			if strings.Contains(vf, "://") || strings.HasPrefix(p, "../") || p == ".." {
				return nil, fmt.Errorf("line %d: valueFiles: %q is not a file of the checkout", nodes[i].Line, vf)
			}
			r.values = append(r.values, p)
		}
		r.ignoreMissing = h.IgnoreMissingValueFiles
		at := "spec.source.helm"
		if multi {
			at = fmt.Sprintf("spec.sources[%d].helm", i)
		}
		if len(h.FileParameters) > 0 {
			return nil, fmt.Errorf("%s.fileParameters: not supported", at)
		}
		var inline map[string]any
		objNode := splice.Lookup(nodes[i], "helm", "valuesObject")
		hasObj := objNode != nil && !(objNode.Kind == yaml.ScalarNode && objNode.ShortTag() == "!!null")
		// Argo CD passes valuesObject when it is set, and values only
		// when it is not: they are not merged.
		if h.Values != "" && !hasObj {
			v, err := loadValues([]byte(h.Values))
			if err != nil {
				return nil, fmt.Errorf("%s.values: %w", at, err)
			}
			inline = mergeValues(inline, v)
		}
		obj, err := inlineValues(objNode, at+".valuesObject")
		if err != nil {
			return nil, err
		}
		inline = mergeValues(inline, obj)
		for _, p := range h.Parameters {
			v, err := setValues(p.Name + "=" + p.Value)
			if err != nil {
				return nil, fmt.Errorf("%s.parameters: %s: %w", at, p.Name, err)
			}
			inline = mergeValues(inline, v)
		}
		if len(inline) > 0 {
			r.inline, r.inlineAt = inline, r.via+" "+at
			if (h.Values == "" || hasObj) && len(h.Parameters) == 0 {
				r.inlinePath = valuePath{"spec", "source", "helm", "valuesObject"}
				if multi {
					r.inlinePath = valuePath{"spec", "sources", i, "helm", "valuesObject"}
				}
				r.inlineAt += ".valuesObject"
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// fluxHelmRelease is what the editor reads of a Flux HelmRelease.
type fluxHelmRelease struct {
	ReleaseName     string `yaml:"releaseName"`
	TargetNamespace string `yaml:"targetNamespace"`
	Chart           struct {
		Spec struct {
			Chart     string `yaml:"chart"`
			SourceRef struct {
				Kind string `yaml:"kind"`
			} `yaml:"sourceRef"`
			ValuesFiles []string `yaml:"valuesFiles"`
			ValuesFile  string   `yaml:"valuesFile"`
		} `yaml:"spec"`
	} `yaml:"chart"`
	ValuesFrom []any `yaml:"valuesFrom"`
}

// fluxRelease reads a Flux HelmRelease whose chart is a path of a
// GitRepository (taken to be this repository). Flux names the release
// [targetNamespace-]name unless releaseName says otherwise; valuesFiles
// are paths from the source's root, merged in order, and spec.values
// comes last.
func fluxRelease(root *yaml.Node, isChart func(string) bool) ([]*helmRelease, error) {
	md := splice.Lookup(root, "metadata")
	name, ns := splice.Str(md, "name"), splice.Str(md, "namespace")
	var spec fluxHelmRelease
	if err := decode(splice.Lookup(root, "spec"), "spec", &spec); err != nil {
		return nil, err
	}
	cs := spec.Chart.Spec
	dir := path.Clean(strings.TrimPrefix(cs.Chart, "/"))
	if cs.Chart != "" && (cs.SourceRef.Kind == "GitRepository" || cs.SourceRef.Kind == "Bucket") && leaves(dir) {
		return nil, fmt.Errorf("spec.chart.spec.chart %q leaves the source: not rendered", cs.Chart)
	}
	if cs.Chart == "" || cs.SourceRef.Kind != "GitRepository" && cs.SourceRef.Kind != "Bucket" || !isChart(dir) {
		return nil, nil
	}
	via := "HelmRelease " + name
	if len(spec.ValuesFrom) > 0 {
		return nil, errors.New("spec.valuesFrom reads ConfigMaps or Secrets of the cluster, so what it renders is not known here: not rendered")
	}
	rel := name
	if spec.TargetNamespace != "" {
		rel = spec.TargetNamespace + "-" + name
	}
	r := &helmRelease{via: via, name: cmpOr(spec.ReleaseName, rel), namespace: cmpOr(spec.TargetNamespace, ns), chart: dir}
	vfs := cs.ValuesFiles
	if cs.ValuesFile != "" {
		vfs = append([]string{cs.ValuesFile}, vfs...)
	}
	// Flux's valuesFiles replace the chart's values.yaml, which is read
	// only where they list it.
	r.noDefault = len(vfs) > 0
	for _, vf := range vfs {
		p := path.Clean(strings.TrimPrefix(vf, "/"))
		if strings.HasPrefix(p, "../") || p == ".." {
			return nil, fmt.Errorf("spec.chart.spec.valuesFiles: %q is not a file of the checkout", vf)
		}
		r.values = append(r.values, p)
	}
	v, err := inlineValues(splice.Lookup(root, "spec", "values"), "spec.values")
	if err != nil {
		return nil, err
	}
	if len(v) > 0 {
		r.inline, r.inlineAt, r.inlinePath = v, via+" spec.values", valuePath{"spec", "values"}
	}
	return []*helmRelease{r}, nil
}

// kustReleases reads the helmCharts of a kustomization. Only a
// kustomization that does nothing else with them is rendered here: one
// that also has resources, patches, name prefixes or labels transforms the
// chart's output in ways the editor does not trace, so it is reported.
// Its namespace: is applied to what the charts render, as kustomize does.
func kustReleases(file string, root *yaml.Node, isChart func(string) bool) ([]*helmRelease, error) {
	dir := path.Dir(file)
	for i := 0; i+1 < len(root.Content); i += 2 {
		switch k := root.Content[i].Value; k {
		case "apiVersion", "kind", "metadata", "namespace", "helmCharts", "helmGlobals":
		default:
			return nil, fmt.Errorf("line %d: %s next to helmCharts transforms what the charts render, which is not traced: not rendered (kustomize would also run the helm binary)",
				root.Content[i].Line, k)
		}
	}
	var globals struct {
		ChartHome string `yaml:"chartHome"`
	}
	if err := decode(splice.Lookup(root, "helmGlobals"), "helmGlobals", &globals); err != nil {
		return nil, err
	}
	home := path.Join(dir, cmpOr(globals.ChartHome, "charts"))
	seq := splice.Lookup(root, "helmCharts")
	if seq.Kind != yaml.SequenceNode {
		return nil, fmt.Errorf("line %d: helmCharts is not a list", seq.Line)
	}
	var out []*helmRelease
	for i, n := range seq.Content {
		var hc struct {
			Name                  string   `yaml:"name"`
			Version               string   `yaml:"version"`
			ReleaseName           string   `yaml:"releaseName"`
			Namespace             string   `yaml:"namespace"`
			ValuesFile            string   `yaml:"valuesFile"`
			AdditionalValuesFiles []string `yaml:"additionalValuesFiles"`
			ValuesMerge           string   `yaml:"valuesMerge"`
		}
		at := fmt.Sprintf("helmCharts[%d]", i)
		if err := decode(n, at, &hc); err != nil {
			return nil, err
		}
		chart := path.Join(home, hc.Name)
		if hc.Version != "" && !isChart(chart) {
			chart = path.Join(home, hc.Name+"-"+hc.Version, hc.Name)
		}
		if hc.Name == "" || !isChart(chart) {
			return nil, fmt.Errorf("line %d: %s: chart %q is not a chart of the checkout below %s (kustomize would pull it): not rendered", n.Line, at, hc.Name, home)
		}
		// kustomize writes valuesInline into the valuesFile it hands helm
		// (by valuesMerge), and passes additionalValuesFiles after it: they
		// override valuesInline, and with merge or replace the file's
		// values win over or replace the inline ones. Only the default,
		// inline over valuesFile with nothing after, is rendered here.
		if hc.ValuesMerge != "" && hc.ValuesMerge != "override" {
			return nil, fmt.Errorf("line %d: %s.valuesMerge %q: only the default override is rendered here: not rendered", n.Line, at, hc.ValuesMerge)
		}
		if vi := splice.Lookup(n, "valuesInline"); vi != nil && len(vi.Content) > 0 && len(hc.AdditionalValuesFiles) > 0 {
			return nil, fmt.Errorf("line %d: %s has valuesInline and additionalValuesFiles, which kustomize puts above valuesInline: not rendered", n.Line, at)
		}
		r := &helmRelease{via: fmt.Sprintf("%s %s", file, at), name: cmpOr(hc.ReleaseName, hc.Name), namespace: hc.Namespace, chart: chart, src: i,
			nsOverride: splice.Str(root, "namespace")}
		for _, vf := range append([]string{hc.ValuesFile}, hc.AdditionalValuesFiles...) {
			if vf == "" {
				continue
			}
			p := path.Join(dir, vf)
			if path.IsAbs(vf) || strings.Contains(vf, "://") || strings.HasPrefix(p, "../") || p == ".." {
				return nil, fmt.Errorf("line %d: %s: values file %q is not a file of the checkout", n.Line, at, vf)
			}
			r.values = append(r.values, p)
		}
		v, err := inlineValues(splice.Lookup(n, "valuesInline"), at+".valuesInline")
		if err != nil {
			return nil, err
		}
		if len(v) > 0 {
			r.inline, r.inlineAt, r.inlinePath = v, file+" "+at+".valuesInline", valuePath{"helmCharts", i, "valuesInline"}
		}
		out = append(out, r)
	}
	return out, nil
}

// sameRepo reports whether two Argo CD repoURLs name one repository:
// equal but for a trailing slash or .git.
func sameRepo(a, b string) bool {
	norm := func(u string) string { return strings.TrimSuffix(strings.TrimSuffix(u, "/"), ".git") }
	return norm(a) == norm(b)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// NewIndex finds the releases among files that render charts of the
// checkout and renders them. readTree reads a chart directory (all of its
// files: the checkout's reader skips templates).
func NewIndex(ctx context.Context, files map[string][]byte, readTree func(dir string) (map[string][]byte, error), included func(file string) bool) *Index {
	return newIndex(ctx, files, readTree, included, newRenderer(defaultRenderLimits()))
}

// newIndex is NewIndex rendering with rd. The charts' files and what the
// releases render are held for the whole run, and what they render is
// parsed: like the checkout's YAML they are bounded together, by
// checkout.TotalBound (the renders) and four times that (the charts'
// files, held as they are).
func newIndex(ctx context.Context, files map[string][]byte, readTree func(dir string) (map[string][]byte, error), included func(file string) bool, rd *renderer) *Index {
	hx := &Index{files: files, charts: map[string]*helmChart{}, kusts: map[string]bool{}, rd: rd, included: included}
	dirs := chartDirs(files)
	if len(dirs) == 0 {
		return hx
	}
	isChart := func(d string) bool { _, ok := slices.BinarySearch(dirs, d); return ok }
	paths := make([]string, 0, len(files))
	for p, b := range files {
		if screenRelease(b) {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	for _, p := range paths {
		rs, probs, unr := releasesIn(p, files[p], isChart)
		hx.problems = append(hx.problems, probs...)
		hx.unrendered = append(hx.unrendered, unr...)
		hx.releases = append(hx.releases, rs...)
		if kustomize.IsKustomization(p) && (len(rs) > 0 || len(probs) > 0) {
			hx.kusts[p] = true
		}
	}
	named := map[string]bool{}
	budget := checkout.TotalBound()
	var charts, renders int64
	for _, r := range hx.releases {
		named[r.chart] = true
		if _, ok := hx.charts[r.chart]; !ok {
			c := &helmChart{dir: r.chart}
			c.files, c.err = readTree(r.chart)
			if c.err == nil {
				for _, b := range c.files {
					charts += int64(len(b))
				}
				if charts > 4*budget {
					c.files, c.err = nil, fmt.Errorf("%w: with the charts read before it, more than %d MiB", checkout.ErrTooLarge, 4*budget>>20)
				}
			}
			hx.charts[r.chart] = c
		}
		r.render(ctx, hx)
		if renders += int64(len(r.out)); r.err == nil && renders > budget {
			r.err = fmt.Errorf("%w: %s: with the releases rendered before it, more than %d MiB rendered (the bound follows the memory limit): not read", ErrHelm, r.via, budget>>20)
			r.out, r.objs = nil, nil
		}
		if r.err == nil && included(r.file) {
			// What is deployed is what the including kustomization makes
			// of the chart's output, which is not traced.
			r.err = fmt.Errorf("%w: %s is included by another kustomization, which transforms what the chart renders: not rendered", ErrHelm, r.via)
			r.objs = nil
		}
		if r.err != nil {
			hx.problems = append(hx.problems, workload.Problem{File: r.file, Line: r.line, Err: r.err})
		}
	}
	for _, d := range dirs {
		if !named[d] {
			hx.Unreleased = append(hx.Unreleased, d)
		}
	}
	return hx
}

// layers returns the values of release r from files, lowest precedence
// first, with their names: the chart's values.yaml, each values file,
// the inline values.
func (r *helmRelease) layers(chart map[string][]byte, file func(string) ([]byte, bool)) ([]valuesLayer, error) {
	var ls []valuesLayer
	def := map[string]any{}
	if !r.noDefault {
		var err error
		if def, err = loadValues(chart["values.yaml"]); err != nil {
			return nil, fmt.Errorf("%s/values.yaml: %w", r.chart, err)
		}
	}
	ls = append(ls, valuesLayer{file: path.Join(r.chart, "values.yaml"), vals: def})
	for _, p := range r.values {
		b, ok := file(p)
		if !ok && r.ignoreMissing {
			continue
		}
		if !ok {
			return nil, fmt.Errorf("values file %s is not a YAML file of the checkout", p)
		}
		v, err := loadValues(b)
		if err != nil {
			return nil, fmt.Errorf("values file %s: %w", p, err)
		}
		ls = append(ls, valuesLayer{file: p, vals: v})
	}
	if r.inline != nil {
		ls = append(ls, valuesLayer{inline: r.inlineAt, vals: r.inline})
	}
	return ls, nil
}

// chartFiles are the chart files r renders: without values.yaml when it
// is not r's base (it is then one of r's values files, or not read).
func (r *helmRelease) chartFiles(files map[string][]byte) map[string][]byte {
	if !r.noDefault {
		return files
	}
	out := make(map[string][]byte, len(files))
	for p, b := range files {
		if p != "values.yaml" {
			out[p] = b
		}
	}
	return out
}

// render renders r from the index's files, and reads its workloads.
func (r *helmRelease) render(ctx context.Context, hx *Index) {
	c := hx.charts[r.chart]
	if c.err != nil {
		r.err = fmt.Errorf("%w: %s: chart %s cannot be read: %w", ErrHelm, r.via, r.chart, c.err)
		return
	}
	ls, err := r.layers(c.files, func(p string) ([]byte, bool) { b, ok := hx.files[p]; return b, ok })
	if err == nil {
		r.out, err = hx.rd.render(ctx, r.chartFiles(c.files), r, userValues(ls))
	}
	if err != nil {
		r.err = fmt.Errorf("%w: %s: %w", ErrHelm, r.via, err)
		return
	}
	r.objs, r.err = r.workloads(r.out)
}

// workloads reads the workloads of a rendered stream.
func (r *helmRelease) workloads(out []byte) ([]hobj, error) {
	bw, err := workload.BuiltWorkloads(out)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: what chart %s renders does not parse: %w", ErrHelm, r.via, r.chart, err)
	}
	objs := make([]hobj, 0, len(bw))
	for _, b := range bw {
		w := b.Workload
		w.Ref.Namespace = r.objNamespace(w.Ref.Namespace)
		w.File, w.Line = r.file, r.line
		objs = append(objs, hobj{w: w, doc: b.Doc, rendered: b.Workload.Ref})
	}
	return objs, nil
}

// objNamespace is the namespace a rendered object lands in.
func (r *helmRelease) objNamespace(ns string) string {
	switch {
	case r.nsOverride != "":
		return r.nsOverride
	case ns != "":
		return ns
	}
	return r.namespace
}

// find returns the object of r that ref names: the namespace may be
// filled in by the caller when neither the object nor the release has one.
func (r *helmRelease) find(ref usage.Ref) (hobj, bool) {
	for _, o := range r.objs {
		got := o.w.Ref
		if got.Kind == ref.Kind && got.Name == ref.Name && (got.Namespace == ref.Namespace || got.Namespace == "") {
			return o, true
		}
	}
	return hobj{}, false
}

// Claims reports whether file is a kustomization that renders a chart:
// what kustomize makes of it is dropped, its release is read here.
func (hx *Index) Claims(file string) bool { return hx.kusts[file] }

// Found are the workloads the releases render, and the releases that do
// not render.
func (hx *Index) Found() workload.Found {
	f := workload.Found{Problems: hx.problems}
	for _, r := range hx.releases {
		for _, o := range r.objs {
			f.Workloads = append(f.Workloads, o.w)
		}
		if r.err != nil {
			continue
		}
		if s, err := splice.Parse(r.out); err == nil {
			for _, u := range workload.UnsupportedIn(s, r.file, false) {
				if u.Ref.Namespace == "" {
					u.Ref.Namespace = r.namespace
				}
				f.Unsupported = append(f.Unsupported, u)
			}
		}
	}
	return f
}

// Edit renders the releases again when a file they read changed since
// discovery, and applies edits.
func (hx *Index) Edit(ctx context.Context, fsys fs.FS, edits []workload.Edit, res *workload.Result) error {
	hx.reread(ctx, fsys).apply(ctx, edits, res)
	return nil
}

// Owns reports whether the workloads of file are rendered by a release.
func (hx *Index) Owns(file string) bool {
	return slices.ContainsFunc(hx.releases, func(r *helmRelease) bool { return r.file == file })
}

// leaves reports whether a clean slash path climbs above the root.
func leaves(p string) bool {
	return p == ".." || strings.HasPrefix(p, "../")
}

// inDir reports whether path p is in directory dir, or below it.
func inDir(p, dir string) bool {
	return dir == "." || strings.HasPrefix(p, dir+"/")
}
