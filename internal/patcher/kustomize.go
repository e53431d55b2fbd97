package patcher

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Kustomize. A repository with kustomizations is deployed as what
// `kustomize build` makes of them, not as its files: a base Deployment
// becomes p-app in namespace prod in one overlay and s-app in staging in
// another, and a patch file is a fragment, not a workload. Discovery
// builds every kustomization with the kustomize Go API (krusty, on an
// in-memory copy of the files read from the checkout) and reports the
// workloads of the overlays, the kustomizations no other one includes,
// under their built identity; the files the kustomizations read are not
// read as plain manifests.

// ErrKustomize: a kustomization does not build, or an edit of what it
// builds cannot be placed or proven.
var ErrKustomize = errors.New("kustomize")

// kustIndex is every kustomization of a repository, built.
type kustIndex struct {
	files map[string][]byte // the files builds read, by slash path
	kusts []*kust           // sorted by file
	// used are the files some kustomization reads: resources, patches.
	used map[string]bool
}

// kust is one kustomization and its build.
type kust struct {
	file, dir string
	k         types.Kustomization
	// root: no other kustomization of the repository includes it, so it
	// is what a GitOps controller builds.
	root bool
	// dirs are the kustomizations it includes (resources, components).
	dirs []string
	out  []byte // kustomize build output
	objs []kobj
	err  error
}

// kobj is one built workload of a kustomization.
type kobj struct {
	w Workload // as built; File is the kustomization
	// origin is the file whose document defines it, and name the
	// object's name there (before namePrefix and nameSuffix).
	origin, name, namespace string
}

// isKustomization reports whether the base name of p is one kustomize
// reads as a kustomization.
func isKustomization(p string) bool {
	return slices.Contains(konfig.RecognizedKustomizationFileNames(), path.Base(p))
}

// buildRoot is where the in-memory copy of the repository lives.
const buildRoot = "/repo"

// memFS returns an in-memory file system holding files under buildRoot.
func memFS(files map[string][]byte) (filesys.FileSystem, error) {
	fs := filesys.MakeFsInMemory()
	for p, b := range files {
		if err := fs.WriteFile(path.Join(buildRoot, p), b); err != nil {
			return nil, err
		}
	}
	return fs, nil
}

// build runs kustomize on dir. With trace, every object says which file
// it came from (config.kubernetes.io/origin), for finding where to edit.
func build(fs filesys.FileSystem, dir string, trace bool) (out []byte, origins map[usage.Ref]string, err error) {
	defer func() {
		// kustomize is large and reads what the repository holds: a
		// panic in it is a kustomization that does not build, not the
		// end of the run.
		if r := recover(); r != nil {
			out, origins, err = nil, nil, fmt.Errorf("kustomize panicked: %v", r)
		}
	}()
	opts := krusty.MakeDefaultOptions()
	rm, err := krusty.MakeKustomizer(opts).Run(fs, path.Join(buildRoot, dir))
	if err != nil {
		return nil, nil, err
	}
	if !trace {
		out, err = rm.AsYaml()
		return out, nil, err
	}
	origins = map[usage.Ref]string{}
	for _, r := range rm.Resources() {
		o, err := r.GetOrigin()
		if err != nil || o == nil || o.Repo != "" {
			continue
		}
		ref := usage.Ref{Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName()}
		origins[ref] = path.Join(dir, o.Path)
	}
	return nil, origins, nil
}

// traced returns a copy of files whose kustomizations ask kustomize for
// origin annotations; nil when one cannot be rewritten.
func traced(files map[string][]byte, kusts []*kust) map[string][]byte {
	out := make(map[string][]byte, len(files))
	for p, b := range files {
		out[p] = b
	}
	for _, k := range kusts {
		rn, err := yaml.Parse(string(files[k.file]))
		if err != nil {
			continue
		}
		seq := yaml.NewListRNode(types.OriginAnnotations)
		if _, err := rn.Pipe(yaml.SetField("buildMetadata", seq)); err != nil {
			continue
		}
		s, err := rn.String()
		if err != nil {
			continue
		}
		out[k.file] = []byte(s)
	}
	return out
}

// indexKustomize finds and builds the kustomizations among files. Those
// that do not build are kept with their error.
func indexKustomize(files map[string][]byte) *kustIndex {
	ix := &kustIndex{files: files, used: map[string]bool{}}
	byDir := map[string]*kust{}
	for p, b := range files {
		if !isKustomization(p) {
			continue
		}
		dir := path.Dir(p)
		if prev, ok := byDir[dir]; ok {
			// kustomize refuses a directory with two of them.
			prev.err = fmt.Errorf("%w: %s and %s in one directory", ErrKustomize, prev.file, p)
			continue
		}
		k := &kust{file: p, dir: dir, root: true}
		if err := yaml.Unmarshal(b, &k.k); err != nil {
			k.err = fmt.Errorf("%w: %s: %w", ErrKustomize, p, err)
		}
		byDir[dir] = k
		ix.kusts = append(ix.kusts, k)
	}
	sort.Slice(ix.kusts, func(i, j int) bool { return ix.kusts[i].file < ix.kusts[j].file })
	if len(ix.kusts) == 0 {
		return ix
	}
	for _, k := range ix.kusts {
		ix.used[k.file] = true
		for _, r := range append(slices.Clone(k.k.Resources), k.k.Components...) {
			p := path.Join(k.dir, r)
			if sub, ok := byDir[p]; ok {
				sub.root = false
				k.dirs = append(k.dirs, p)
				continue
			}
			ix.used[p] = true
		}
		for _, p := range k.k.Patches {
			if p.Path != "" {
				ix.used[path.Join(k.dir, p.Path)] = true
			}
		}
		//lint:ignore SA1019 kustomizations in use still have it, and kustomize reads it
		for _, p := range k.k.PatchesStrategicMerge {
			if !strings.Contains(string(p), "\n") {
				ix.used[path.Join(k.dir, string(p))] = true
			}
		}
		//lint:ignore SA1019 kustomizations in use still have it, and kustomize reads it
		for _, p := range k.k.PatchesJson6902 {
			if p.Path != "" {
				ix.used[path.Join(k.dir, p.Path)] = true
			}
		}
	}
	fs, err := memFS(files)
	if err != nil {
		for _, k := range ix.kusts {
			k.err = fmt.Errorf("%w: %w", ErrKustomize, err)
		}
		return ix
	}
	tfs, err := memFS(traced(files, ix.kusts))
	if err != nil {
		tfs = nil
	}
	for _, k := range ix.kusts {
		if k.err == nil {
			k.err = localOnly(k, files)
		}
	}
	// A kustomization that includes one reaching beyond the checkout would
	// fetch through it: it is not built either.
	for changed := true; changed; {
		changed = false
		for _, k := range ix.kusts {
			if k.err != nil {
				continue
			}
			for _, d := range k.dirs {
				if sub, ok := byDir[d]; ok && sub.err != nil {
					k.err = fmt.Errorf("%w: %s includes %s, which is not built: %w", ErrKustomize, k.file, sub.file, sub.err)
					changed = true
					break
				}
			}
		}
	}
	for _, k := range ix.kusts {
		if k.err != nil || k.component() {
			continue
		}
		k.out, _, k.err = build(fs, k.dir, false)
		if k.err != nil {
			k.err = fmt.Errorf("%w: build %s: %w", ErrKustomize, k.dir, k.err)
			continue
		}
		var origins map[usage.Ref]string
		if tfs != nil {
			_, origins, _ = build(tfs, k.dir, true)
		}
		k.objs = builtWorkloads(k, origins, files)
	}
	return ix
}

// builtWorkloads reads the workloads of a build, with where each is
// defined.
func builtWorkloads(k *kust, origins map[usage.Ref]string, files map[string][]byte) []kobj {
	s, err := parseStream(k.out)
	if err != nil {
		k.err = fmt.Errorf("%w: the output of %s does not parse: %w", ErrKustomize, k.dir, err)
		return nil
	}
	var objs []kobj
	for _, doc := range s.docs {
		if len(doc.Content) == 0 {
			continue
		}
		ref, spec, ok := identify(doc.Content[0])
		if !ok || validRef(ref) != nil {
			continue
		}
		w := readWorkload(doc.Content[0], ref, spec)
		w.File = k.file
		o := kobj{w: w, origin: origins[ref]}
		o.name, o.namespace = originalName(files[o.origin], ref)
		objs = append(objs, o)
	}
	return objs
}

// originalName is the name and namespace, in the file that defines it,
// of the object built as ref: of the documents of its kind, the one whose
// name the built name contains (namePrefix and nameSuffix only add to
// it), the longest when several do.
func originalName(b []byte, ref usage.Ref) (name, namespace string) {
	s, err := parseStream(b)
	if err != nil {
		return "", ""
	}
	for _, doc := range s.docs {
		if len(doc.Content) == 0 {
			continue
		}
		got, _, ok := identify(doc.Content[0])
		if ok && got.Kind == ref.Kind && strings.Contains(ref.Name, got.Name) && len(got.Name) > len(name) {
			name, namespace = got.Name, got.Namespace
		}
	}
	return name, namespace
}

// kust returns the kustomization of file.
func (ix *kustIndex) kust(file string) *kust {
	for _, k := range ix.kusts {
		if k.file == file {
			return k
		}
	}
	return nil
}

// fileIn returns the kustomization file of dir, "" when none.
func (ix *kustIndex) fileIn(dir string) string {
	for _, k := range ix.kusts {
		if k.dir == dir {
			return k.file
		}
	}
	return ""
}

// chain returns the kustomizations from k down to the one that lists
// file as a resource, outermost first; nil when file is not below k.
func (ix *kustIndex) chain(k *kust, file string) []*kust {
	for _, r := range k.k.Resources {
		if path.Join(k.dir, r) == file {
			return []*kust{k}
		}
	}
	for _, d := range k.dirs {
		if sub := ix.kust(ix.fileIn(d)); sub != nil {
			if c := ix.chain(sub, file); c != nil {
				return append([]*kust{k}, c...)
			}
		}
	}
	return nil
}

// reread returns the index of the files as they are now under fsys: ix
// itself when none changed since discovery, else a new build of them.
func (ix *kustIndex) reread(fsys fs.FS) *kustIndex {
	now := make(map[string][]byte, len(ix.files))
	same := true
	for p, b := range ix.files {
		nb, err := checkout.ReadFile(fsys, p)
		if err != nil {
			same = false
			continue
		}
		now[p] = nb
		same = same && bytes.Equal(b, nb)
	}
	if same {
		return ix
	}
	return indexKustomize(now)
}

// withComponents puts after each kustomization of chain the components
// it includes: their patches apply before its own, after those of the
// kustomizations it includes as resources.
func (ix *kustIndex) withComponents(chain []*kust) []*kust {
	var out []*kust
	for _, k := range chain {
		out = append(out, k)
		for _, c := range k.k.Components {
			if sub := ix.kust(ix.fileIn(path.Join(k.dir, c))); sub != nil {
				out = append(out, ix.withComponents([]*kust{sub})...)
			}
		}
	}
	return out
}

// component reports whether k is a Component: it builds only as part of
// the kustomizations that include it.
func (k *kust) component() bool { return k.k.Kind == types.ComponentKind }

// reads reports whether building k may read one of files: whether one
// lies below the directory of k or of a kustomization it includes.
func (ix *kustIndex) reads(k *kust, files []string) bool {
	for _, f := range files {
		if under(f, k.dir) {
			return true
		}
	}
	for _, d := range k.dirs {
		if sub := ix.kust(ix.fileIn(d)); sub != nil && ix.reads(sub, files) {
			return true
		}
	}
	return false
}

// under reports whether slash path p lies below directory dir.
func under(p, dir string) bool {
	return dir == "." || strings.HasPrefix(p, dir+"/")
}
