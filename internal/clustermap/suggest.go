package clustermap

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/policy"
)

// Suggestion is a drafted map: the clusters resolved, and what was not.
type Suggestion struct {
	// Clusters are sorted by name; each has at least one path.
	Clusters []Cluster
	// Unresolved are the objects the map leaves out, or holds with a
	// doubt, each located; sorted by file and line.
	Unresolved []*located.Error
}

// Cluster is one cluster of the draft.
type Cluster struct {
	Name string
	// Paths are sorted; none lies under another.
	Paths []string
	// From says where each path came from, in the order of Paths.
	From []string
	// Named says how the name was made when it is not the object's own
	// word (a server's host, a name that was not a DNS label).
	Named string
}

// Suggest reads the checkout at the directory repo once, and drafts its
// map. The error is for a checkout that cannot be opened or read as a
// whole (checkout.Read's).
func Suggest(ctx context.Context, repo string) (*Suggestion, error) {
	dir, err := checkout.OpenDir(repo)
	if err != nil {
		return nil, fmt.Errorf("open checkout: %w", err)
	}
	defer dir.Close()
	files, err := checkout.Read(ctx, dir, checkout.Options{})
	if err != nil {
		return nil, err
	}
	return FromFiles(files), nil
}

// object is one document of a kind the draft reads.
type object struct {
	file string
	root *yaml.Node
	kind string
	name string // namespace/name, or name
}

func (o object) String() string { return o.kind + " " + o.name }

// draft is the state of one suggestion.
type draft struct {
	files    []string
	clusters map[string]*Cluster
	out      []*located.Error
}

// FromFiles drafts the map of files, as Suggest does.
func FromFiles(files *checkout.Files) *Suggestion {
	d := &draft{clusters: map[string]*Cluster{}}
	for _, p := range files.Problems {
		d.out = append(d.out, &located.Error{File: p.Path, Err: fmt.Errorf("not read, so not mapped: %w", p.Err)})
	}
	var flux, argo []object
	for _, f := range files.Files {
		d.files = append(d.files, f.Path)
		for _, o := range d.objects(f) {
			group, _, _ := strings.Cut(str(get(o.root, "apiVersion")), "/")
			switch {
			case group == "kustomize.toolkit.fluxcd.io" && o.kind == "Kustomization":
				flux = append(flux, o)
			case group == "argoproj.io" && o.kind == "Application":
				argo = append(argo, o)
			case group == "argoproj.io" && o.kind == "ApplicationSet":
				d.applicationSet(o)
			case group == "source.extensions.fluxcd.io" && o.kind == "ArtifactGenerator",
				group == "source.toolkit.fluxcd.io" && o.kind == "ExternalArtifact":
				d.fail(o, o.root, "kind", "%s builds an artifact outside this checkout's paths: Kustomizations reading it are not mapped", o)
			}
		}
	}
	d.flux(flux)
	for _, o := range argo {
		d.application(o)
	}
	return d.suggestion()
}

// objects parses a file's documents, keeping those with a kind. A file
// that does not parse is named: it may hold an object of the map.
func (d *draft) objects(f checkout.File) []object {
	dec := yaml.NewDecoder(bytes.NewReader(f.Data))
	var docs []*yaml.Node
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			d.out = append(d.out, &located.Error{File: f.Path, Err: fmt.Errorf("not YAML, so not mapped: %w", err)})
			return nil
		}
		docs = append(docs, &doc)
	}
	if err := checkout.CheckAliases(docs...); err != nil {
		d.out = append(d.out, &located.Error{File: f.Path, Err: fmt.Errorf("not mapped: %w", err)})
		return nil
	}
	var out []object
	for _, doc := range docs {
		root := doc
		if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
			root = root.Content[0]
		}
		kind := str(get(root, "kind"))
		if kind == "" {
			continue
		}
		name := str(get(root, "metadata", "name"))
		if ns := str(get(root, "metadata", "namespace")); ns != "" {
			name = ns + "/" + name
		}
		out = append(out, object{file: f.Path, root: root, kind: kind, name: name})
	}
	return out
}

// flux maps the Kustomizations: those in clusters/<name>/ first, then,
// until nothing changes, those under a path a mapped one applies.
func (d *draft) flux(objs []object) {
	owners := make([][]string, len(objs))
	for changed := true; changed; {
		changed = false
		for i, o := range objs {
			if owners[i] != nil {
				continue
			}
			owners[i] = d.fluxOwners(o)
			if owners[i] == nil {
				continue
			}
			changed = true
			for _, c := range owners[i] {
				d.fluxPaths(o, c)
			}
		}
	}
	for i, o := range objs {
		if owners[i] == nil {
			d.fail(o, o.root, "metadata", "%s is neither in clusters/<name>/ nor under a path another mapped Kustomization applies: its cluster is not known", o)
		}
	}
}

// fluxOwners are the clusters a Kustomization belongs to: the <name> of
// clusters/<name>/, or the clusters whose paths hold its file; nil when
// none is known yet.
func (d *draft) fluxOwners(o object) []string {
	if parts := strings.Split(o.file, "/"); len(parts) >= 3 && parts[0] == "clusters" {
		name, named := clusterName(parts[1])
		if name == "" {
			d.fail(o, o.root, "metadata", "clusters/%s cannot name a cluster: no letter or digit", parts[1])
			return []string{}
		}
		c := d.cluster(name, named)
		d.add(c, "clusters/"+parts[1], fmt.Sprintf("%s:%d (%s)", o.file, o.root.Line, o))
		return []string{name}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(d.clusters)) {
		if slices.ContainsFunc(d.clusters[name].Paths, func(p string) bool { return under(o.file, p) }) {
			out = append(out, name)
		}
	}
	return out
}

// fluxPaths adds what a Kustomization of cluster c applies, or names why
// it cannot.
func (d *draft) fluxPaths(o object, c string) {
	spec := get(o.root, "spec")
	if n := get(spec, "kubeConfig"); n != nil {
		d.fail(o, n, "spec.kubeConfig", "%s applies to the cluster its kubeconfig secret names, not to %s: add that cluster by hand", o, c)
		return
	}
	if kind := str(get(spec, "sourceRef", "kind")); kind != "" && kind != "GitRepository" {
		d.fail(o, get(spec, "sourceRef", "kind"), "spec.sourceRef.kind", "%s reads %s %s, not this checkout", o, kind, str(get(spec, "sourceRef", "name")))
		return
	}
	pn := get(spec, "path")
	p := str(pn)
	if pn == nil {
		pn = o.root
	}
	clean, ok := d.repoPath(o, pn, "spec.path", p)
	if !ok {
		return
	}
	from := fmt.Sprintf("%s:%d (%s)", o.file, pn.Line, o)
	d.add(d.clusters[c], clean, from)
	for _, key := range []string{"substitute", "substituteFrom"} {
		if n := get(spec, "postBuild", key); n != nil {
			d.fail(o, n, "spec.postBuild."+key, "%s substitutes ${...} in the files under %s as it applies them: the map holds the path, the tool reads the values as written", o, clean)
			break
		}
	}
}

// application maps an Argo CD Application's paths to the cluster of its
// destination.
func (d *draft) application(o object) {
	dest := get(o.root, "spec", "destination")
	var name, named string
	field := "spec.destination.name"
	word := str(get(dest, "name"))
	if word == "" {
		field = "spec.destination.server"
		word = str(get(dest, "server"))
	}
	switch {
	case word == "":
		d.fail(o, o.root, "spec.destination", "%s names no destination: its cluster is not known", o)
		return
	case strings.Contains(word, "{{") || strings.Contains(word, "$"):
		d.fail(o, get(dest, strings.TrimPrefix(field, "spec.destination.")), field, "%s's destination %q is a template: its cluster is not known", o, word)
		return
	case field == "spec.destination.server" && strings.TrimSuffix(word, "/") == "https://kubernetes.default.svc":
		// Argo CD's own name for the cluster it runs in.
		name, named = "in-cluster", "the server "+word+", Argo CD's in-cluster"
	case field == "spec.destination.server":
		host := strings.TrimPrefix(strings.TrimPrefix(word, "https://"), "http://")
		host, _, _ = strings.Cut(host, "/")
		host, _, _ = strings.Cut(host, ":")
		name, _ = clusterName(host)
		named = "the host of the server " + word
	default:
		name, named = clusterName(word)
	}
	if name == "" {
		d.fail(o, get(dest, strings.TrimPrefix(field, "spec.destination.")), field, "%q cannot name a cluster: no letter or digit", word)
		return
	}
	type src struct {
		n     *yaml.Node
		field string
	}
	var srcs []src
	if n := get(o.root, "spec", "source"); n != nil {
		srcs = append(srcs, src{n, "spec.source"})
	}
	if n := get(o.root, "spec", "sources"); n != nil && n.Kind == yaml.SequenceNode {
		for i, s := range n.Content {
			srcs = append(srcs, src{s, fmt.Sprintf("spec.sources[%d]", i)})
		}
	}
	if len(srcs) == 0 {
		d.fail(o, o.root, "spec.source", "%s has no source: nothing to map", o)
		return
	}
	for _, s := range srcs {
		pn := get(s.n, "path")
		if pn == nil {
			if chart := str(get(s.n, "chart")); chart != "" {
				d.fail(o, s.n, s.field+".chart", "%s renders the chart %s of %s, not a path of this checkout", o, chart, str(get(s.n, "repoURL")))
			}
			// A source with only a ref holds values for the others.
			continue
		}
		clean, ok := d.repoPath(o, pn, s.field+".path", str(pn))
		if !ok {
			continue
		}
		d.add(d.cluster(name, named), clean, fmt.Sprintf("%s:%d (%s)", o.file, pn.Line, o))
	}
}

// applicationSet names an ApplicationSet and its generators: they choose
// clusters and paths when Argo CD runs.
func (d *draft) applicationSet(o object) {
	var kinds []string
	if gens := get(o.root, "spec", "generators"); gens != nil && gens.Kind == yaml.SequenceNode {
		for _, g := range gens.Content {
			if g.Kind == yaml.MappingNode {
				for i := 0; i+1 < len(g.Content); i += 2 {
					kinds = append(kinds, g.Content[i].Value)
				}
			}
		}
	}
	what := "its generators"
	if len(kinds) > 0 {
		what += " (" + strings.Join(kinds, ", ") + ")"
	}
	d.fail(o, o.root, "spec.generators", "%s: %s choose its clusters and paths when Argo CD runs; name them in the map by hand", o, what)
}

// repoPath checks a path an object applies, and cleans it as the map
// writes it: relative to the root, inside the checkout, holding files.
func (d *draft) repoPath(o object, n *yaml.Node, field, p string) (string, bool) {
	if strings.Contains(p, "${") || strings.Contains(p, "{{") {
		d.fail(o, n, field, "%q is substituted when it is applied: its value is not known here", p)
		return "", false
	}
	clean := path.Clean("/" + strings.TrimPrefix(p, "./"))
	clean = strings.TrimPrefix(clean, "/")
	if clean == "" {
		clean = "."
	}
	if rel := path.Clean(strings.TrimPrefix(p, "./")); rel == ".." || strings.HasPrefix(rel, "../") {
		d.fail(o, n, field, "%q leads outside the checkout", p)
		return "", false
	}
	if !slices.ContainsFunc(d.files, func(f string) bool { return under(f, clean) }) {
		d.fail(o, n, field, "%q holds no file of the checkout: it may be another repository's", p)
		return "", false
	}
	return clean, true
}

func (d *draft) cluster(name, named string) *Cluster {
	c, ok := d.clusters[name]
	if !ok {
		c = &Cluster{Name: name, Named: named}
		d.clusters[name] = c
	}
	return c
}

// add gives c the path p, unless a path of c holds it already; paths of
// c under p go.
func (d *draft) add(c *Cluster, p, from string) {
	if slices.ContainsFunc(c.Paths, func(q string) bool { return under(p, q) }) {
		return
	}
	for i := len(c.Paths) - 1; i >= 0; i-- {
		if under(c.Paths[i], p) {
			c.Paths = slices.Delete(c.Paths, i, i+1)
			c.From = slices.Delete(c.From, i, i+1)
		}
	}
	c.Paths = append(c.Paths, p)
	c.From = append(c.From, from)
}

func (d *draft) fail(o object, n *yaml.Node, field, format string, args ...any) {
	e := &located.Error{File: o.file, Field: field, Err: fmt.Errorf(format, args...)}
	if n != nil {
		e.Line, e.Column = n.Line, n.Column
	}
	d.out = append(d.out, e)
}

func (d *draft) suggestion() *Suggestion {
	s := &Suggestion{Unresolved: d.out}
	for _, name := range slices.Sorted(maps.Keys(d.clusters)) {
		c := *d.clusters[name]
		idx := make([]int, len(c.Paths))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(c.Paths[a], c.Paths[b]) })
		paths, from := make([]string, len(idx)), make([]string, len(idx))
		for i, j := range idx {
			paths[i], from[i] = c.Paths[j], c.From[j]
		}
		c.Paths, c.From = paths, from
		s.Clusters = append(s.Clusters, c)
	}
	slices.SortStableFunc(s.Unresolved, func(a, b *located.Error) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	return s
}

// Map is the draft as the policy loader reads it: each label value is
// the name, as when the map leaves it out.
func (s *Suggestion) Map() *policy.ClusterMap {
	m := &policy.ClusterMap{Meta: policy.Meta{APIVersion: apiVersion, Kind: policy.KindClusterMap, Name: mapName},
		Spec: policy.ClusterMapSpec{Label: policy.DefaultClusterLabel}}
	for _, c := range s.Clusters {
		m.Spec.Clusters = append(m.Spec.Clusters, policy.ClusterSpec{Name: c.Name, LabelValue: c.Name, Paths: slices.Clone(c.Paths)})
	}
	return m
}

// get walks a mapping node by keys; nil when a key is missing or a node
// on the way is not a mapping. Aliases are followed: the file passed
// checkout.CheckAliases.
func get(n *yaml.Node, keys ...string) *yaml.Node {
	for _, k := range keys {
		for n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == k {
				next = n.Content[i+1]
				break
			}
		}
		n = next
	}
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// str is a scalar's value; empty for anything else.
func str(n *yaml.Node) string {
	if n == nil || n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return ""
	}
	return n.Value
}

// under reports whether the repository file f is p or lies below it.
func under(f, p string) bool {
	return p == "." || f == p || strings.HasPrefix(f, p+"/")
}

// clusterName makes a word a cluster's name, a DNS label: lowercase,
// '-' for anything else, at most 63. named says how, when it changed.
func clusterName(word string) (name, named string) {
	var b strings.Builder
	for _, r := range strings.ToLower(word) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	name = strings.Trim(b.String(), "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	if name != word {
		named = fmt.Sprintf("%q made a DNS label", word)
	}
	return name, named
}
