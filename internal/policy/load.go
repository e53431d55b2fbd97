package policy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/located"
)

// Set is every policy found in a repository, validated and linked.
type Set struct {
	Strategies    []*Strategy
	Proactive     []*ProactivePolicy
	Reactive      []*ReactivePolicy
	Consolidation []*ConsolidationPolicy
	// ClusterMap is the repository's map of its clusters; nil without
	// one. It is read from every file of the checkout, whatever paths
	// policies are read from: a run must never read several clusters as
	// one because the map was left out.
	ClusterMap *ClusterMap
	// Broken are policies that failed to load. Whatever they might govern
	// is left alone.
	Broken []*Broken
	// Errors lists every problem found, in file order.
	Errors []error

	// governed holds the rules Govern built for each pair of governing
	// policies, so that workloads governed alike share them: built for
	// every workload, they were a twentieth of a plan's memory. Nil for
	// a Set not made by LoadFiles or Parse: Govern then builds each time.
	governed *governMemo
}

// governMemo is Set.governed: a pair of policies' governance, by pair.
type governMemo struct {
	mu sync.Mutex
	by map[governPair]Governance
}

type governPair struct {
	p *ProactivePolicy
	r *ReactivePolicy
}

// Broken is a policy document that could not be used.
type Broken struct {
	Meta
	// Scope is the policy's scope when it could still be read; nil means
	// unknown, and the policy is taken to govern everything it could.
	Scope *Scope
	Err   error
}

// Load reads the policy documents of the repository at root: every
// document whose apiVersion is in Kubex's group or the project's, in the
// YAML files under root, or only under paths (relative to root) when given.
// It is checkout.Read and LoadFiles in one call. Problems with files and
// documents are collected in Set.Errors; the error return is for a root or
// path that cannot be used, and a cancelled ctx.
func Load(ctx context.Context, root string, paths ...string) (*Set, error) {
	d, err := checkout.OpenDir(root)
	if err != nil {
		return nil, fmt.Errorf("reading policies: %w", err)
	}
	defer d.Close()
	files, err := checkout.Read(ctx, d, checkout.Options{})
	if err != nil {
		return nil, err
	}
	return LoadFiles(files, paths...)
}

// LoadFiles reads the policy documents among files, or only among those
// under paths (relative to the checkout's root) when given. A file that
// could not be read may hold policies: it is Broken, so that whatever they
// might govern is left alone. The error is for a path that cannot be used.
func LoadFiles(files *checkout.Files, paths ...string) (*Set, error) {
	all := files
	files, err := files.Select(paths...)
	if err != nil {
		return nil, fmt.Errorf("policy %w", err)
	}
	l := &loader{set: &Set{}}
	if len(paths) > 0 {
		// The map is read from the whole checkout (Set.ClusterMap).
		selected := map[string]bool{}
		for _, f := range files.Files {
			selected[f.Path] = true
		}
		l.mapsOnly = true
		for _, f := range all.Files {
			if !selected[f.Path] {
				l.file(f.Path, f.Data)
			}
		}
		l.mapsOnly = false
	}
	// Problems and files in path order, so that Errors is in file order.
	probs := files.Problems
	for _, f := range files.Files {
		for len(probs) > 0 && probs[0].Path < f.Path {
			l.unreadable(probs[0].Path, probs[0].Err)
			probs = probs[1:]
		}
		l.file(f.Path, f.Data)
	}
	for _, p := range probs {
		l.unreadable(p.Path, p.Err)
	}
	l.finish()
	return l.set, nil
}

// Parse reads policy documents from one file's content. It is Load for a
// single file, for tests and tools.
func Parse(name string, data []byte) *Set {
	l := &loader{set: &Set{}}
	l.file(name, data)
	l.finish()
	return l.set
}

type loader struct {
	set *Set
	// maps are the ClusterMaps read; mapsOnly reads no other kind.
	maps     []*ClusterMap
	mapsOnly bool
}

// finish runs once every document is read: the cluster map kept, each
// policy scoped to its clusters, then linked to its strategy.
func (l *loader) finish() {
	l.clusterMaps(l.maps)
	l.scopeToClusters()
	l.link()
	l.set.governed = &governMemo{by: map[governPair]Governance{}}
}

// policyGroups are mentioned by every policy document; a file that does
// not parse but mentions one may hold a policy nobody can read.
var policyGroups = [][]byte{[]byte(KubexGroup + "/"), []byte(ProjectGroup + "/")}

// mayHoldPolicy reports whether data could hold a policy document, before
// any YAML is decoded: most files of a repository are manifests, and
// decoding each of them twice (here and in discovery) doubled the cost of
// a run. A policy's apiVersion is its group, a slash and a version, so
// the group is in the text unless an escape in a double-quoted string
// spells it, or the file is not UTF-8 (YAML allows UTF-16 and -32); those
// files are decoded to be sure. Line folding cannot split the group: it
// turns a line break into a space, and the group has none.
func mayHoldPolicy(data []byte) bool {
	return mentionsGroup(data) || bytes.IndexByte(data, '\\') >= 0 || bytes.IndexByte(data, 0) >= 0 ||
		bytes.HasPrefix(data, []byte{0xfe, 0xff}) || bytes.HasPrefix(data, []byte{0xff, 0xfe})
}

func mentionsGroup(data []byte) bool {
	for _, g := range policyGroups {
		if bytes.Contains(data, g) {
			return true
		}
	}
	return false
}

// unreadable records a file or directory that could not be read.
func (l *loader) unreadable(name string, err error) {
	// It may hold policies nobody can read: assume the worst about what
	// they govern, as for a file that does not parse.
	err = &located.Error{File: name, Err: fmt.Errorf("%w (every workload a policy in it could govern is left alone)", err)}
	l.set.Errors = append(l.set.Errors, err)
	l.set.Broken = append(l.set.Broken, &Broken{Meta: Meta{File: name}, Err: err})
}

// unparsable records a file that mentions a policy group but cannot be
// read as YAML: the file may hold policies we cannot read; assume the
// worst about what they govern.
func (l *loader) unparsable(name string, data []byte, err error) {
	if !mentionsGroup(data) {
		return
	}
	err = fmt.Errorf("%s: %w (policies in this file are ignored, and every workload they could govern is left alone)", name, err)
	l.set.Broken = append(l.set.Broken, &Broken{Meta: Meta{File: name}, Err: err})
	l.set.Errors = append(l.set.Errors, err)
}

func (l *loader) file(name string, data []byte) {
	if !mayHoldPolicy(data) || l.mapsOnly && !bytes.Contains(data, []byte(KindClusterMap)) {
		return
	}
	if len(data) > checkout.MaxFileSize {
		l.unreadable(name, fmt.Errorf("%w: more than %d bytes", checkout.ErrTooLarge, checkout.MaxFileSize))
		return
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs []*yaml.Node
	var parseErr error
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			parseErr = err
			break
		}
		docs = append(docs, &doc)
	}
	// The decoder follows aliases: bound what they expand to before it
	// meets them.
	if err := checkout.CheckAliases(docs...); err != nil {
		var ae *checkout.AliasError
		if errors.As(err, &ae) {
			err = fmt.Errorf("line %d: %w", ae.Line, err)
		}
		l.unparsable(name, data, err)
		return
	}
	for _, doc := range docs {
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		l.document(name, doc.Content[0])
	}
	if parseErr != nil {
		l.unparsable(name, data, parseErr)
	}
}

// envelope is the shape of every policy document.
type envelope[S any] struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	Spec       S          `yaml:"spec"`
}

type objectMeta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

func (l *loader) document(file string, top *yaml.Node) {
	apiVersion, kind := scalarField(top, "apiVersion"), scalarField(top, "kind")
	group, version, _ := strings.Cut(apiVersion, "/")
	if group != KubexGroup && group != ProjectGroup || l.mapsOnly && kind != KindClusterMap {
		return
	}
	meta := Meta{APIVersion: apiVersion, Kind: kind, File: file, Line: top.Line}
	// Read the identity leniently first, so that a document refused
	// before it is decoded still names what it was.
	if md := mappingField(top, "metadata"); md != nil {
		meta.Name, meta.Namespace = scalarField(md, "name"), scalarField(md, "namespace")
	}
	if meta.Clustered() {
		// The API server ignores a namespace on cluster-scoped objects.
		meta.Namespace = ""
	}
	d := newDecoder(file, group == ProjectGroup, top)
	if version != Version {
		d.errorf(top, "apiVersion", "%q is not supported: use %s/%s", apiVersion, group, Version)
		l.broken(d, meta, nil)
		return
	}
	switch kind {
	case KindClusterStrategy, KindStrategy:
		p := &Strategy{Meta: meta}
		p.Spec = decodeEnvelope[StrategySpec](d, top, &p.Meta)
		validator{d}.strategy(p)
		if !l.broken(d, p.Meta, nil) {
			l.set.Strategies = append(l.set.Strategies, p)
		}
	case KindClusterProactive, KindProactive:
		p := &ProactivePolicy{Meta: meta}
		p.Spec = decodeEnvelope[ProactiveSpec](d, top, &p.Meta)
		validator{d}.proactive(p)
		p.refAt = d.position("spec.automationStrategyRef.name")
		if !l.broken(d, p.Meta, &p.Spec.Scope) {
			l.set.Proactive = append(l.set.Proactive, p)
		}
	case KindClusterReactive, KindReactive:
		p := &ReactivePolicy{Meta: meta}
		p.Spec = decodeEnvelope[ReactiveSpec](d, top, &p.Meta)
		validator{d}.reactive(p)
		p.refAt = d.position("spec.automationStrategyRef.name")
		if !l.broken(d, p.Meta, &p.Spec.Scope) {
			l.set.Reactive = append(l.set.Reactive, p)
		}
	case KindClusterMap:
		if group != ProjectGroup {
			d.errorf(top, "apiVersion", "%s is the project's own kind: use %s/%s", kind, ProjectGroup, Version)
			l.broken(d, meta, nil)
			return
		}
		m := &ClusterMap{Meta: meta}
		m.Spec = decodeEnvelope[ClusterMapSpec](d, top, &m.Meta)
		validator{d}.clusterMap(m)
		if !l.broken(d, m.Meta, nil) {
			l.maps = append(l.maps, m)
		}
	case KindConsolidation:
		p := &ConsolidationPolicy{Meta: meta}
		p.Spec = decodeEnvelope[ConsolidationSpec](d, top, &p.Meta)
		validator{d}.consolidation(p)
		if !l.broken(d, p.Meta, nil) {
			l.set.Consolidation = append(l.set.Consolidation, p)
		}
	default:
		if group == KubexGroup && slices.Contains(otherKubexKinds, kind) {
			// Kubex's kinds for CPU, memory and operations are not ours
			// to read.
			return
		}
		if near, ok := located.Nearest(kind, policyKinds); ok {
			d.errorf(top, "kind", "unknown kind %q in %s (did you mean %q?)", kind, apiVersion, near)
		} else {
			d.errorf(top, "kind", "unknown kind %q in %s (known: %s)", kind, apiVersion, strings.Join(policyKinds, ", "))
		}
		l.broken(d, meta, nil)
	}
}

func decodeEnvelope[S any](d *decoder, top *yaml.Node, m *Meta) S {
	var env envelope[S]
	d.decode(top, "", reflect.ValueOf(&env).Elem())
	if !m.Clustered() {
		m.Namespace = env.Metadata.Namespace
	}
	m.Name = env.Metadata.Name
	return env.Spec
}

// broken records the decoder's errors, if any, and reports whether there
// were some. scope is the policy's scope, kept only when no error touches
// it or the identity of the document.
func (l *loader) broken(d *decoder, m Meta, scope *Scope) bool {
	if len(d.errs) == 0 {
		return false
	}
	// In the order of the file, whether decoding or validation found
	// them: the author reads the document top to bottom.
	slices.SortStableFunc(d.errs, func(a, b *located.Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column))
	})
	joined := make([]error, 0, len(d.errs))
	trusted := scope
	for _, e := range d.errs {
		l.set.Errors = append(l.set.Errors, e)
		joined = append(joined, e)
		if e.Field == "" || strings.HasPrefix(e.Field, "spec.scope") || strings.HasPrefix(e.Field, "metadata") ||
			e.Field == "kind" || e.Field == "apiVersion" || e.Field == "spec" {
			trusted = nil
		}
	}
	l.set.Broken = append(l.set.Broken, &Broken{Meta: m, Scope: trusted, Err: errors.Join(joined...)})
	return true
}

// policyKinds are the kinds this tool reads.
var policyKinds = []string{KindClusterStrategy, KindStrategy, KindClusterProactive, KindProactive,
	KindClusterReactive, KindReactive, KindConsolidation, KindClusterMap}

// otherKubexKinds are Kubex's kinds that say nothing about GPU fractions.
// Any other kind in Kubex's group is an error: a misspelt GpuReactivePolicy
// must not vanish silently.
var otherKubexKinds = []string{"StaticPolicy", "ClusterStaticPolicy", "GlobalConfiguration", "PolicyEvaluation",
	"PodAffinityPolicy", "GpuRebalancingPolicy", "ClusterGpuRebalancingPolicy", "ContainerArgsPolicy",
	"VllmOptimizationPolicy", "ClusterCompactionPolicy", "RollbackPolicy", "ClusterRollbackPolicy"}

func mappingField(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.MappingNode {
			return m.Content[i+1]
		}
	}
	return nil
}

func scalarField(m *yaml.Node, key string) string {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key && m.Content[i+1].Kind == yaml.ScalarNode {
			return m.Content[i+1].Value
		}
	}
	return ""
}
