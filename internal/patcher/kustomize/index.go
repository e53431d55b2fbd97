package kustomize

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/checkout"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
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

// Index is every kustomization of a repository, built.
type Index struct {
	files map[string][]byte // the files builds read, by slash path
	kusts []*kust           // sorted by file
	// byDir and byFile find a kustomization by its directory and file.
	byDir, byFile map[string]*kust
	// used are the files some kustomization reads: resources, patches.
	used map[string]bool
	// parsed are the files original has parsed, by slash path, nil for
	// one that does not parse: overlays of one base all find their
	// objects in its files.
	parsed map[string]*splice.Stream
	// lim bounds the builds, and clock times them: an index built again
	// after edits shares its clock.
	lim   buildLimits
	clock *buildClock
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
	// rm is its build as kustomize holds it, and out the build rendered
	// as `kustomize build` writes it: at discovery when the workloads are
	// read from the rendering, else the first time output is called.
	rm  resmap.ResMap
	out []byte
	// held are rm's objects when discovery read them as they are
	// (readHeld), nil when it read the rendering.
	held        []*yaml.Node
	unsupported []workload.Unsupported
	objs        []kobj
	err         error
	// outside are the files it names beyond its directory; loose: it or
	// a kustomization it includes has some, so it is built without
	// load restrictions.
	outside []string
	loose   bool
}

// kobj is one built workload of a kustomization.
type kobj struct {
	w workload.Workload // as built; File is the kustomization
	// obj is the object that defines it as built: the workload, or the
	// DynamoGraphDeployment whose service is service; spec is how the
	// workload is read in it.
	obj     usage.Ref
	service string
	spec    workload.Spec
	// origin is the file whose document defines it (kustomize's
	// config.kubernetes.io/origin), and name and namespace the object's
	// there (before namePrefix, nameSuffix and namespace).
	origin, name, namespace string
	// names are every name it has on its way from origin to the build,
	// the original first, and namespaces the same for namespaces: a
	// patch may target any of them.
	names, namespaces []string
	gvk               resid.Gvk
	// meta are its labels and annotations in its file and as built.
	meta []objMeta
}

// objMeta is the labels and annotations of an object at one stage.
type objMeta struct{ labels, annotations map[string]string }

// IsKustomization reports whether the base name of p is one kustomize
// reads as a kustomization.
func IsKustomization(p string) bool {
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
	return memFiles{fs}, nil
}

// memFiles is kyaml's in-memory file system with CleanedAbs answered
// from the path asked for. kyaml's finds a node's name by walking its
// parent's entries: each build of one of 10,000 overlays in a directory
// walked thousands of them, 6 % of a plan's CPU. In memory there are no
// links, so a node's path is the cleaned path that found it.
type memFiles struct{ filesys.FileSystem }

// CleanedAbs answers as kyaml's does: the directory, and the file's
// name when p is a file. What it would refuse, it is asked.
func (m memFiles) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	clean := path.Clean(filesys.StripLeadingSeps(p))
	if p != "" && clean != ".." && !strings.HasPrefix(clean, "../") {
		full := path.Join("/", clean)
		if m.IsDir(full) {
			return filesys.ConfirmedDir(full), "", nil
		}
		if m.Exists(full) {
			return filesys.ConfirmedDir(path.Dir(full)), path.Base(full), nil
		}
	}
	return m.FileSystem.CleanedAbs(p)
}

// build runs kustomize on dir, as `kustomize build` does (load
// restrictions root-only, unless loose).
func build(fs filesys.FileSystem, dir string, loose bool) (out []byte, err error) {
	rm, err := run(fs, dir, loose)
	if err != nil {
		return nil, err
	}
	return rm.AsYaml()
}

// run is build without rendering the result.
func run(fs filesys.FileSystem, dir string, loose bool) (rm resmap.ResMap, err error) {
	defer func() {
		// kustomize is large and reads what the repository holds: a
		// panic in it is a kustomization that does not build, not the
		// end of the run.
		if r := recover(); r != nil {
			rm, err = nil, fmt.Errorf("kustomize panicked: %v", r)
		}
	}()
	opts := krusty.MakeDefaultOptions()
	if loose {
		opts.LoadRestrictions = types.LoadRestrictionsNone
	}
	return krusty.MakeKustomizer(opts).Run(fs, path.Join(buildRoot, dir))
}

// buildTraced builds dir from the traced copy of the files (see traced)
// and returns what a build of the files as they are makes, unrendered,
// with the origin of each object: the file its document is in, slash path
// from the root. keep says the kustomization asks for origin annotations
// itself, so they stay in the build.
func buildTraced(clk *buildClock, fs filesys.FileSystem, dir string, loose, keep bool) (rm resmap.ResMap, origins map[usage.Ref]string, err error) {
	rm, err = clk.run(fs, dir, loose)
	if err != nil {
		return nil, nil, err
	}
	origins = map[usage.Ref]string{}
	for _, r := range rm.Resources() {
		o, err := r.GetOrigin()
		if err != nil || o == nil || o.Repo != "" || o.Path == "" {
			continue
		}
		ref := usage.Ref{Kind: r.GetKind(), Namespace: r.GetNamespace(), Name: r.GetName()}
		origins[ref] = path.Join(dir, o.Path)
	}
	if !keep {
		// What krusty does at the end of a build that did not ask
		// for them: the output is byte for byte that of the files.
		if err := rm.RemoveOriginAnnotations(); err != nil {
			return nil, nil, err
		}
	}
	return rm, origins, nil
}

// output returns k's build rendered as `kustomize build` writes it,
// rendering it the first time.
func (k *kust) output() ([]byte, error) {
	if k.out == nil && k.rm != nil {
		out, err := k.rm.AsYaml()
		if err != nil {
			return nil, fmt.Errorf("%w: build %s: %w", ErrKustomize, k.dir, err)
		}
		k.out = out
	}
	return k.out, nil
}

// traced returns a copy of files whose kustomizations ask kustomize for
// origin annotations, and the kustomizations that asked for them
// already. One that cannot be rewritten gets that as its error.
func traced(files map[string][]byte, kusts []*kust) (map[string][]byte, map[string]bool) {
	out := make(map[string][]byte, len(files))
	for p, b := range files {
		out[p] = b
	}
	asked := map[string]bool{}
	for _, k := range kusts {
		if k.err != nil {
			continue
		}
		if slices.Contains(k.k.BuildMetadata, types.OriginAnnotations) {
			asked[k.file] = true
			continue
		}
		// Keep what it asks for (managedByLabel, transformerAnnotations):
		// the output must be the one its build makes.
		seq := yaml.NewListRNode(append(slices.Clone(k.k.BuildMetadata), types.OriginAnnotations)...)
		rn, err := yaml.Parse(string(files[k.file]))
		if err == nil {
			_, err = rn.Pipe(yaml.SetField("buildMetadata", seq))
		}
		var s string
		if err == nil {
			s, err = rn.String()
		}
		if err != nil {
			k.err = fmt.Errorf("%w: %s: %w", ErrKustomize, k.file, err)
			continue
		}
		out[k.file] = []byte(s)
	}
	return out, asked
}

// NewIndex finds and builds the kustomizations among files. Those
// that do not build are kept with their error. Only the roots are built:
// what another kustomization includes is built as part of it.
// read reads a file the YAML files do not hold (a generator's source);
// nil reads none.
func NewIndex(files map[string][]byte, read func(string) ([]byte, error)) *Index {
	return indexKustomizeWithin(files, read, defaultBuildLimits(), nil)
}

// indexKustomizeWithin is NewIndex within lim, timed by clk (a new clock
// for lim when nil).
func indexKustomizeWithin(files map[string][]byte, read func(string) ([]byte, error), lim buildLimits, clk *buildClock) *Index {
	if clk == nil {
		clk = newBuildClock(lim)
	}
	ix := &Index{files: maps.Clone(files), used: map[string]bool{}, byDir: map[string]*kust{}, byFile: map[string]*kust{}, lim: lim, clock: clk}
	byDir := ix.byDir
	for p, b := range files {
		if !IsKustomization(p) {
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
		// as kustomize reads it: bases: are resources:
		k.k.FixKustomization()
		byDir[dir] = k
		ix.byFile[p] = k
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
				// an included kustomization (a base, a component, an
				// overlay of an aggregate) is built by what includes it
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
	// A generator's sources (a properties file, an env file) are files of
	// the checkout too, read as they are named.
	if read != nil {
		for _, k := range ix.kusts {
			for _, src := range k.generatorSources() {
				p := path.Join(k.dir, src)
				if _, ok := ix.files[p]; ok || !local(src) || remoteSpec(src) {
					continue
				}
				if b, err := read(p); err == nil {
					ix.files[p] = b
				}
			}
		}
	}
	for _, k := range ix.cyclic() {
		if k.err == nil {
			k.err = fmt.Errorf("%w: %s includes itself", ErrKustomize, k.file)
		}
	}
	dirs := dirsOf(ix.files)
	for _, k := range ix.kusts {
		if k.err == nil {
			k.err = localOnly(k, ix.files, dirs)
		}
	}
	ix.propagate()
	ix.bound(lim)
	ix.loosen()
	tfiles, asked := traced(ix.files, ix.kusts)
	fs, err := memFS(tfiles)
	if err != nil {
		for _, k := range ix.kusts {
			if k.err == nil {
				k.err = fmt.Errorf("%w: %w", ErrKustomize, err)
			}
		}
		return ix
	}
	for _, k := range ix.kusts {
		if k.err != nil || !k.root || k.component() {
			continue
		}
		var origins map[usage.Ref]string
		k.rm, origins, k.err = buildTraced(ix.clock, fs, k.dir, k.loose, asked[k.file])
		if k.err != nil {
			k.err = fmt.Errorf("%w: build %s: %w", ErrKustomize, k.dir, k.err)
			continue
		}
		if h, ok := readHeld(k.rm, k.file); ok {
			k.unsupported, k.held = h.unsupported, h.roots
			k.objs = ix.builtWorkloads(k, h.workloads, origins)
			continue
		}
		// Read from the rendering, as `kustomize build` writes it.
		if k.out, k.err = k.rm.AsYaml(); k.err != nil {
			k.err = fmt.Errorf("%w: build %s: %w", ErrKustomize, k.dir, k.err)
			continue
		}
		bw, err := workload.BuiltWorkloads(k.out)
		if err != nil {
			k.err = fmt.Errorf("%w: the output of %s does not parse: %w", ErrKustomize, k.dir, err)
			continue
		}
		if s, err := splice.Parse(k.out); err == nil {
			k.unsupported = workload.UnsupportedIn(s, k.file, false)
		}
		k.objs = ix.builtWorkloads(k, bw, origins)
	}
	return ix
}

// loosen marks the kustomizations that name a file outside their own
// directory (and its subdirectories), and those that include one. `kustomize
// build` refuses that unless told --load-restrictor LoadRestrictionsNone;
// Flux builds that way, and a repository whose kustomizations need it is
// deployed by a controller that does, so they are built that way too.
// Only files of the checkout are ever read (localOnly).
func (ix *Index) loosen() {
	for _, k := range ix.kusts {
		if k.err != nil {
			continue
		}
		for _, r := range k.refs() {
			p := path.Join(k.dir, r)
			if _, file := ix.files[p]; file && !under(p, k.dir) {
				k.outside = append(k.outside, p)
			}
		}
	}
	memo := map[*kust]bool{}
	for _, k := range ix.kusts {
		k.loose = fold(ix, memo, k, func(k *kust, _ []*kust, subs []bool) bool {
			return len(k.outside) > 0 || slices.Contains(subs, true)
		})
	}
}

// anyIncluded reports whether f holds for k or a kustomization it
// includes, directly or not. Each is visited once: an include cycle
// (which kustomize refuses) ends the walk rather than the process.
func (ix *Index) anyIncluded(k *kust, f func(*kust) bool) bool {
	seen := map[*kust]bool{}
	var walk func(k *kust) bool
	walk = func(k *kust) bool {
		if seen[k] {
			return false
		}
		seen[k] = true
		if f(k) {
			return true
		}
		for _, d := range k.dirs {
			if sub := ix.byDir[d]; sub != nil && walk(sub) {
				return true
			}
		}
		return false
	}
	return walk(k)
}

// builtWorkloads reads the workloads of a build, with where each is
// defined: kustomize's origin annotation names the file; the document
// in it is the only one of the kind, else the one whose name the
// namePrefix and nameSuffix of the kustomizations between make the built
// name, exactly.
func (ix *Index) builtWorkloads(k *kust, bw []workload.BuiltWorkload, origins map[usage.Ref]string) []kobj {
	var objs []kobj
	for _, b := range bw {
		w := b.Workload
		w.File = k.file
		o := kobj{w: w, origin: origins[b.Object], obj: b.Object, service: b.Service, spec: b.Spec}
		o.gvk = gvkOf(b.Root)
		o.meta = []objMeta{metaOf(b.Root)}
		if o.origin != "" {
			ix.original(k, &o)
		}
		objs = append(objs, o)
	}
	return objs
}

// original finds the document of o.origin that k builds as o: the only
// one of its kind there, else the one whose name the namePrefix and
// nameSuffix of the kustomizations between make the built name, exactly.
// It fills in o's name, namespace, names and meta; o.name stays "" when
// no document is it for sure.
func (ix *Index) original(k *kust, o *kobj) {
	s, ok := ix.parsed[o.origin]
	if !ok {
		var err error
		if s, err = splice.Parse(ix.files[o.origin]); err != nil {
			s = nil
		}
		if ix.parsed == nil {
			ix.parsed = map[string]*splice.Stream{}
		}
		ix.parsed[o.origin] = s
	}
	if s == nil {
		return
	}
	type cand struct {
		ref  usage.Ref
		node *yaml.Node
	}
	var docs []cand
	for _, doc := range s.Docs {
		if len(doc.Content) == 0 {
			continue
		}
		if got, ok := objectOf(doc.Content[0], o.service); ok && got.Kind == o.obj.Kind {
			docs = append(docs, cand{got, doc.Content[0]})
		}
	}
	// kustomizations from k in to the one that lists the file, each
	// with its components after it
	chain := ix.withComponents(ix.chain(k, o.origin))
	var matches []cand
	for _, d := range docs {
		if len(docs) == 1 || rename(chain, d.ref.Name) == o.obj.Name {
			matches = append(matches, d)
		}
	}
	if len(matches) != 1 {
		return
	}
	d := matches[0]
	o.name, o.namespace = d.ref.Name, d.ref.Namespace
	o.names, o.namespaces = []string{d.ref.Name}, []string{d.ref.Namespace}
	ns := d.ref.Namespace
	for i := len(chain) - 1; i >= 0; i-- {
		if n := rename(chain[i:], d.ref.Name); n != o.names[len(o.names)-1] {
			o.names = append(o.names, n)
		}
		if chain[i].k.Namespace != "" && chain[i].k.Namespace != ns {
			ns = chain[i].k.Namespace
			o.namespaces = append(o.namespaces, ns)
		}
	}
	if !slices.Contains(o.names, o.obj.Name) {
		o.names = append(o.names, o.obj.Name)
	}
	if !slices.Contains(o.namespaces, o.obj.Namespace) {
		o.namespaces = append(o.namespaces, o.obj.Namespace)
	}
	o.meta = append(o.meta, metaOf(d.node))
}

// objectOf is the object a document defines that holds a workload, with
// service service when it is a DynamoGraphDeployment ("" for the
// workload kinds of one object each); ok false when it holds none.
func objectOf(root *yaml.Node, service string) (usage.Ref, bool) {
	for _, id := range workload.IdentifyAll(root) {
		if id.Service == service {
			return id.Object, true
		}
	}
	return usage.Ref{}, false
}

// gvkOf is the group, version and kind of an object.
func gvkOf(n *yaml.Node) resid.Gvk {
	g, v := resid.ParseGroupVersion(splice.Str(n, "apiVersion"))
	return resid.NewGvk(g, v, splice.Str(n, "kind"))
}

// metaOf returns an object's labels and annotations; values that are
// not strings are left out.
func metaOf(n *yaml.Node) objMeta {
	return objMeta{labels: splice.StringMap(splice.Lookup(n, "metadata", "labels")), annotations: splice.StringMap(splice.Lookup(n, "metadata", "annotations"))}
}

// rename is the name chain (outermost first) gives an object named n.
func rename(chain []*kust, n string) string {
	for i := len(chain) - 1; i >= 0; i-- {
		n = chain[i].k.NamePrefix + n + chain[i].k.NameSuffix
	}
	return n
}

// kust returns the kustomization of file.
func (ix *Index) kust(file string) *kust { return ix.byFile[file] }

// fileIn returns the kustomization file of dir, "" when none.
func (ix *Index) fileIn(dir string) string {
	if k := ix.byDir[dir]; k != nil {
		return k.file
	}
	return ""
}

// chain returns the kustomizations from k down to the one that lists
// file as a resource, outermost first; nil when file is not below k.
func (ix *Index) chain(k *kust, file string) []*kust {
	return ix.chainFrom(k, file, map[*kust]bool{})
}

func (ix *Index) chainFrom(k *kust, file string, seen map[*kust]bool) []*kust {
	if seen[k] {
		return nil // an include cycle
	}
	seen[k] = true
	for _, r := range k.k.Resources {
		if path.Join(k.dir, r) == file {
			return []*kust{k}
		}
	}
	for _, d := range k.dirs {
		if sub := ix.kust(ix.fileIn(d)); sub != nil {
			if c := ix.chainFrom(sub, file, seen); c != nil {
				return append([]*kust{k}, c...)
			}
		}
	}
	return nil
}

// reread returns the index of the files as they are now under fsys: ix
// itself when none changed since discovery, else a new build of them.
func (ix *Index) reread(ctx context.Context, fsys fs.FS) (*Index, error) {
	paths := slices.Sorted(maps.Keys(ix.files))
	read := make([][]byte, len(paths))
	ok := make([]bool, len(paths))
	if err := workload.EachFile(ctx, len(paths), func(i int) {
		b, err := checkout.ReadFile(fsys, paths[i])
		read[i], ok[i] = b, err == nil
	}); err != nil {
		return nil, err
	}
	now := make(map[string][]byte, len(ix.files))
	same := true
	for i, p := range paths {
		if !ok[i] {
			same = false // gone or unreadable: not built from
			continue
		}
		now[p] = read[i]
		same = same && bytes.Equal(ix.files[p], read[i])
	}
	if same {
		return ix, nil
	}
	return indexKustomizeWithin(now, func(p string) ([]byte, error) { return checkout.ReadFile(fsys, p) }, ix.lim, ix.clock), nil
}

// withComponents puts after each kustomization of chain the components
// it includes: their patches apply before its own, after those of the
// kustomizations it includes as resources.
func (ix *Index) withComponents(chain []*kust) []*kust {
	seen := map[*kust]bool{}
	var out []*kust
	var add func(k *kust)
	add = func(k *kust) {
		if seen[k] {
			return // an include cycle
		}
		seen[k] = true
		out = append(out, k)
		for _, c := range k.k.Components {
			if sub := ix.kust(ix.fileIn(path.Join(k.dir, c))); sub != nil {
				add(sub)
			}
		}
	}
	for _, k := range chain {
		add(k)
	}
	return out
}

// component reports whether k is a Component: it builds only as part of
// the kustomizations that include it.
func (k *kust) component() bool { return k.k.Kind == types.ComponentKind }

// reads reports whether building k may read one of files: whether one
// lies below the directory of k or of a kustomization it includes.
func (ix *Index) reads(k *kust, files []string) bool {
	return ix.anyIncluded(k, func(k *kust) bool {
		return slices.ContainsFunc(files, func(f string) bool { return under(f, k.dir) || slices.Contains(k.outside, f) })
	})
}

// under reports whether slash path p lies below directory dir.
func under(p, dir string) bool {
	return dir == "." || strings.HasPrefix(p, dir+"/")
}

// Claims reports whether a kustomization reads file: a base Deployment
// and its patches are not workloads of their own, and a file only an
// overlay includes is not a second definition of what the overlay builds.
func (ix *Index) Claims(file string) bool { return ix.used[file] }

// Owns reports whether file is a kustomization: what it builds is edited
// through it.
func (ix *Index) Owns(file string) bool { return ix.kust(file) != nil }

// Included reports whether file is a kustomization another one includes.
func (ix *Index) Included(file string) bool {
	if !IsKustomization(file) {
		return false
	}
	k := ix.kust(file)
	return k != nil && !k.root
}

// Found are the workloads the root kustomizations build, and the
// kustomizations that do not build.
func (ix *Index) Found() workload.Found {
	var f workload.Found
	for _, k := range ix.kusts {
		if k.err != nil {
			f.Problems = append(f.Problems, workload.Problem{File: k.file, Err: k.err})
			continue
		}
		if !k.root {
			continue
		}
		for _, o := range k.objs {
			f.Workloads = append(f.Workloads, o.w)
		}
		f.Unsupported = append(f.Unsupported, k.unsupported...)
	}
	return f
}

// Edit builds the kustomizations again when a file they read changed
// since discovery, and applies edits.
func (ix *Index) Edit(ctx context.Context, fsys fs.FS, edits []workload.Edit, res *workload.Result) error {
	now, err := ix.reread(ctx, fsys)
	if err != nil {
		return err
	}
	now.apply(edits, res)
	return nil
}
