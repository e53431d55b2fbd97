package policy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Set is every policy found in a repository, validated and linked.
type Set struct {
	Strategies    []*Strategy
	Proactive     []*ProactivePolicy
	Reactive      []*ReactivePolicy
	Consolidation []*ConsolidationPolicy
	// Broken are policies that failed to load. Whatever they might govern
	// is left alone.
	Broken []*Broken
	// Errors lists every problem found, in file order.
	Errors []error
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
// Problems with documents are collected in Set.Errors; the error return is
// for when the repository itself cannot be read.
func Load(ctx context.Context, root string, paths ...string) (*Set, error) {
	files, err := yamlFiles(root, paths)
	if err != nil {
		return nil, err
	}
	l := &loader{set: &Set{}}
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rel := filepath.ToSlash(relOrSelf(root, f))
		data, err := readInside(root, f)
		if err != nil {
			// It may hold policies nobody can read: assume the worst about
			// what they govern, as for a file that does not parse.
			err := fmt.Errorf("%s: %w (every workload a policy in it could govern is left alone)", rel, err)
			l.set.Errors = append(l.set.Errors, err)
			l.set.Broken = append(l.set.Broken, &Broken{Meta: Meta{File: rel}, Err: err})
			continue
		}
		l.file(rel, data)
	}
	l.link()
	return l.set, nil
}

// Parse reads policy documents from one file's content. It is Load for a
// single file, for tests and tools.
func Parse(name string, data []byte) *Set {
	l := &loader{set: &Set{}}
	l.file(name, data)
	l.link()
	return l.set
}

type loader struct {
	set *Set
}

// policyGroups are mentioned by every policy document; a file that does
// not parse but mentions one may hold a policy nobody can read.
var policyGroups = [][]byte{[]byte(KubexGroup + "/"), []byte(ProjectGroup + "/")}

func (l *loader) file(name string, data []byte) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			for _, g := range policyGroups {
				if bytes.Contains(data, g) {
					// The file may hold policies we cannot read; assume
					// the worst about what they govern.
					err := fmt.Errorf("%s: %w (policies in this file are ignored, and every workload they could govern is left alone)", name, err)
					l.set.Broken = append(l.set.Broken, &Broken{Meta: Meta{File: name}, Err: err})
					l.set.Errors = append(l.set.Errors, err)
					break
				}
			}
			return
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
			continue
		}
		l.document(name, doc.Content[0])
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
	if group != KubexGroup && group != ProjectGroup {
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
		d.errorf(top, "kind", "unknown kind %q in %s (known: %s)", kind, apiVersion, strings.Join(policyKinds, ", "))
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
	KindClusterReactive, KindReactive, KindConsolidation}

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

// yamlFiles lists the YAML files to read, sorted, skipping dot-directories
// (.git) and refusing paths that lead outside root.
func yamlFiles(root string, paths []string) ([]string, error) {
	if len(paths) == 0 {
		paths = []string{"."}
	}
	var files []string
	for _, p := range paths {
		if filepath.IsAbs(p) || !filepath.IsLocal(filepath.Clean(p)) && filepath.Clean(p) != "." {
			return nil, fmt.Errorf("policy path %q must be relative to the repository and stay inside it", p)
		}
		start := filepath.Join(root, p)
		err := filepath.WalkDir(start, func(path string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if e.IsDir() {
				if path != start && strings.HasPrefix(e.Name(), ".") {
					return filepath.SkipDir
				}
				if e.Name() == "templates" {
					if st, err := os.Stat(filepath.Join(filepath.Dir(path), "Chart.yaml")); err == nil && st.Mode().IsRegular() {
						// A Helm chart's templates are not YAML until
						// rendered (the patcher skips them too).
						return filepath.SkipDir
					}
				}
				return nil
			}
			if ext := filepath.Ext(path); ext == ".yaml" || ext == ".yml" {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("reading policies: %w", err)
		}
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// readInside reads a file, refusing one that is a symlink leading outside
// root: a repository must not make the tool read the host's files.
func readInside(root, path string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return nil, err
	}
	if rel, err := filepath.Rel(realRoot, real); err != nil || !filepath.IsLocal(rel) {
		return nil, errors.New("symlink leads outside the repository; not read")
	}
	return os.ReadFile(real)
}

func relOrSelf(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return rel
}
