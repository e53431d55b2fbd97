package kustomize

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/resid"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/patcher/patchdiff"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Editing what a kustomization builds. Each op of an Edit goes where the
// value it changes is defined for that overlay, looking from the overlay
// inwards (the last patch applied wins):
//
//   - a strategic-merge patch that sets the field (a file, or a literal
//     block of patches:): the op edits it;
//   - a JSON 6902 patch file whose add or replace has as its value
//     exactly what the op changes: that value is edited;
//   - any other JSON 6902 patch, commonAnnotations or labels that set
//     it: refused, naming which (they change more than the field);
//   - else the resource file that defines the object: edited in place
//     when every overlay that builds the object asks for the same ops in
//     the same run, else left alone and new patches in the overlay set
//     the field, with `patches:` entries spliced into its kustomization:
//     a strategic-merge patch for the fields, and a JSON 6902 patch for
//     the items of lists a strategic merge would replace whole (args),
//     each guarded by a test of the base's value (package patchdiff).
//
// Proof: every overlay is built again from the edited files, or, when it
// is alike but for its namespace to one built (alike.go), predicted from
// that one's build. An overlay
// an edit is for must build exactly what the ops make of its old output
// (compared as trees); every other overlay must build the same bytes.
// Anything else refuses the edit, naming the overlay and the difference.

// kedit is an edit of a built workload with what it is built from.
type kedit struct {
	e workload.Edit
	k *kust
	o kobj
}

// apply applies edits of workloads built by the kustomizations of ix
// and adds the results to res: the files changed or created, and the
// edits refused.
func (ix *Index) apply(edits []workload.Edit, res *workload.Result) {
	var kes []kedit
	for _, e := range edits {
		k := ix.kust(e.File)
		i := -1
		if k != nil {
			// nil when the kustomization is gone since discovery
			i = slices.IndexFunc(k.objs, func(o kobj) bool { return o.w.Ref == e.Workload })
		}
		if i < 0 {
			res.Refused = append(res.Refused, workload.Refusal{Workload: e.Workload, File: e.File,
				Err: fmt.Errorf("%w: %s is not built by %s", workload.ErrNotFound, e.Workload, path.Dir(e.File))})
			continue
		}
		kes = append(kes, kedit{e: e, k: k, o: k.objs[i]})
	}
	fs, err := memFS(ix.files)
	if err != nil {
		for _, ke := range kes {
			res.Refused = append(res.Refused, workload.Refusal{Workload: ke.e.Workload, File: ke.e.File, Err: fmt.Errorf("%w: %w", ErrKustomize, err)})
		}
		return
	}
	users := ix.userIndex()
	groups := ix.groups(kes, users)
	// First every group where its values are defined, proven once by
	// building each overlay the edits touch: the usual case, and one
	// build per overlay rather than one per edit. Should any placement
	// fail or the proof disprove the lot, each group is placed and
	// proven alone, in order, so that one bad edit refuses only itself.
	st := &kstate{ix: ix, fs: fs, cur: map[string][]byte{}, changes: map[string][]changes.Change{}, deferProof: true, userIx: users}
	for _, g := range groups {
		if _, err := st.place(g, nil); err != nil {
			st = nil
			break
		}
	}
	if st != nil && len(st.cur) > 0 {
		if err := st.prove(st.cur, st.accepted); err != nil {
			st = nil
		}
	}
	if st == nil {
		st = &kstate{ix: ix, fs: fs, cur: map[string][]byte{}, changes: map[string][]changes.Change{}, userIx: users}
		for _, g := range groups {
			if err := st.try(g); err != nil {
				for _, ke := range g {
					res.Refused = append(res.Refused, workload.Refusal{Workload: ke.e.Workload, File: ke.e.File, Err: err})
				}
			}
		}
	}
	var paths []string
	for p := range st.cur {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		old, had := ix.files[p]
		if had && bytes.Equal(old, st.cur[p]) {
			continue
		}
		res.Files = append(res.Files, changes.File{Path: p, Old: old, New: st.cur[p], Created: !had,
			Changes: st.changes[p], Splices: []splice.Splice{splice.Whole(old, st.cur[p])}})
	}
}

// groups puts together the edits that can only be done together: those
// of overlays that build the same object of the same resource file with
// the same ops, when that file is where the ops go.
func (ix *Index) groups(kes []kedit, ui userIndex) [][]kedit {
	key := func(ke kedit) string {
		return ke.o.origin + "\x00" + ke.o.name + "\x00" + ke.o.service + "\x00" + opsKey(ke.e.Ops)
	}
	byKey := map[string][]kedit{}
	var order []string
	for _, ke := range kes {
		k := key(ke)
		if _, ok := byKey[k]; !ok {
			order = append(order, k)
		}
		byKey[k] = append(byKey[k], ke)
	}
	var out [][]kedit
	for _, k := range order {
		g := byKey[k]
		users := ui.of(g[0].o)
		mine := map[string]bool{}
		for _, ke := range g {
			mine[ke.k.file] = true
		}
		all := len(users) > 0
		for _, u := range users {
			all = all && mine[u]
		}
		if all && len(g) > 1 {
			out = append(out, g)
			continue
		}
		for _, ke := range g {
			out = append(out, []kedit{ke})
		}
	}
	return out
}

func opsKey(ops []workload.Op) string {
	s := make([]string, len(ops))
	for i, op := range ops {
		s[i] = op.String()
	}
	return strings.Join(s, ";")
}

// userIndex finds the overlays that build an object from a document,
// made once for all the groups: looking through every overlay's objects
// for each group was quadratic in a fleet of overlays.
type userIndex map[string][]string

// userKey is what users of one document share.
func userKey(o kobj) string {
	return o.origin + "\x00" + o.name + "\x00" + o.service + "\x00" + o.w.Ref.Kind
}

// userIndex indexes the roots that build, in order, by their objects.
func (ix *Index) userIndex() userIndex {
	ui := userIndex{}
	for _, k := range ix.kusts {
		if !k.root || k.err != nil {
			continue
		}
		for _, x := range k.objs {
			if x.origin == "" {
				continue
			}
			key := userKey(x)
			if l := ui[key]; len(l) == 0 || l[len(l)-1] != k.file {
				ui[key] = append(l, k.file)
			}
		}
	}
	return ui
}

// of are the overlays that build an object from the same document as o.
func (ui userIndex) of(o kobj) []string {
	if o.origin == "" {
		return nil
	}
	return ui[userKey(o)]
}

// kstate is the files as edited so far and the edits that made them.
type kstate struct {
	ix *Index
	// fs holds the original files and those of the accepted edits
	// (proven ones), under buildRoot; prove adds the files it proves.
	fs       filesys.FileSystem
	cur      map[string][]byte // changed and created files
	accepted []kedit
	changes  map[string][]changes.Change
	// deferProof: place keeps edits unproven; the caller proves them
	// all at once.
	deferProof bool
	userIx     userIndex // the ix's, made once by apply
}

func (st *kstate) file(p string) ([]byte, bool) {
	if b, ok := st.cur[p]; ok {
		return b, true
	}
	b, ok := st.ix.files[p]
	return b, ok
}

// try places the edits of group g, all of the same object and ops, and
// keeps the result when the builds prove it. When editing where the
// values are defined fails the proof (a patch or component other
// overlays share), a new patch is tried instead: in the overlay, applied
// after everything else it includes, then in each kustomization between
// it and the file, outermost first (an aggregate of overlays builds the
// object of every overlay from one base, and only the overlay's own
// patch changes one of them).
func (st *kstate) try(g []kedit) error {
	elsewhere, err := st.place(g, nil)
	var pe *proofError
	if err == nil || len(g) > 1 || !errors.As(err, &pe) {
		return err
	}
	chain := st.ix.chain(g[0].k, g[0].o.origin)
	var tried []string
	var last error
	for i, k := range chain {
		if i == 0 && !elsewhere {
			continue // that is what place did
		}
		if i > 0 && i == len(chain)-1 {
			continue // a patch beside the file changes what the file does
		}
		if _, last = st.place(g, k); last == nil {
			return nil
		}
		tried = append(tried, k.dir)
	}
	if last == nil {
		return err
	}
	return fmt.Errorf("%w; and as a new patch of %s: %w", err, strings.Join(tried, ", then of "), last)
}

// proofError is a placement the builds disprove.
type proofError struct{ err error }

func (e *proofError) Error() string { return e.err.Error() }
func (e *proofError) Unwrap() error { return e.err }

// place is try with one placement: where the values are defined, or
// with in, all of them in a new patch of kustomization in. elsewhere says
// whether any op went to an existing file.
func (st *kstate) place(g []kedit, in *kust) (elsewhere bool, err error) {
	ke := g[0]
	spec := ke.o.spec
	if ke.o.origin == "" || ke.o.name == "" {
		return false, fmt.Errorf("%w: %s: cannot tell which file defines %s", ErrKustomize, ke.k.dir, ke.e.Workload)
	}
	chain := st.ix.withComponents(st.ix.chain(ke.k, ke.o.origin))
	if chain == nil {
		return false, fmt.Errorf("%w: %s: %s is not a resource of it", ErrKustomize, ke.k.dir, ke.o.origin)
	}
	names := ke.o.names
	// where each op goes: a file (a patch or the resource) or "" for a
	// new patch in the overlay
	type target struct {
		file string
		ops  []workload.Op
	}
	var targets []*target
	at := func(file string) *target {
		for _, t := range targets {
			if t.file == file {
				return t
			}
		}
		t := &target{file: file}
		targets = append(targets, t)
		return t
	}
	shared := len(g) == 1 && len(st.userIx.of(ke.o)) > 1
	for i, op := range ke.e.Ops {
		fields := op.Touches(spec.Template)
		if len(spec.Group.Path) > 0 {
			fields = append(fields, op.Touches(spec.Group)...)
		}
		file, err := st.definer(chain, ke.o, fields, func() ([][]string, error) { return st.opPaths(ke, i) })
		if err != nil {
			return false, err
		}
		if file == "" {
			file = ke.o.origin
			if shared {
				file = ""
			}
		}
		if in != nil {
			file = ""
		}
		elsewhere = elsewhere || file != ""
		t := at(file)
		t.ops = append(t.ops, op)
	}

	next := map[string][]byte{}
	changed := map[string][]changes.Change{}
	for _, t := range targets {
		var err error
		switch {
		case t.file == "":
			err = st.newPatch(ke, cmp.Or(in, ke.k), t.ops, next, changed)
		case strings.HasPrefix(t.file, jsonPrefix):
			err = st.editJSON(ke, strings.TrimPrefix(t.file, jsonPrefix), t.ops, next, changed)
		case strings.HasPrefix(t.file, inlinePrefix):
			// The index follows the last '#': a directory may hold one.
			ref := strings.TrimPrefix(t.file, inlinePrefix)
			cut := strings.LastIndex(ref, "#")
			kf, i := ref[:max(cut, 0)], ref[cut+1:]
			n, _ := strconv.Atoi(i)
			err = st.editInline(ke, kf, n, t.ops, names, next, changed)
		default:
			err = st.editDoc(ke, t.file, t.ops, names, next, changed)
		}
		if err != nil {
			return elsewhere, err
		}
	}
	if !st.deferProof {
		if err := st.prove(next, append(slices.Clone(st.accepted), g...)); err != nil {
			return elsewhere, &proofError{err}
		}
	}
	for p, b := range next {
		st.cur[p] = b
	}
	for p, cs := range changed {
		for _, x := range g {
			for _, c := range cs {
				c.Workload, c.Reason, c.Definition = x.e.Workload, x.e.Reason, x.e.File
				st.changes[p] = append(st.changes[p], c)
			}
		}
	}
	st.accepted = append(st.accepted, g...)
	return elsewhere, nil
}

// inlinePrefix marks a definer that is the patch: string of the entry
// #i of a kustomization's patches; jsonPrefix a JSON 6902 patch file
// whose values hold what the op changes.
const (
	inlinePrefix = "inline:"
	jsonPrefix   = "json6902:"
)

// definer returns the patch file that sets one of fields for the object
// named one of names, looking from the overlay inwards; "" when no patch
// does (the resource file defines it). Patches it cannot edit refuse. A
// JSON 6902 patch that reaches the fields is edited when its values hold
// exactly what the op changes (paths, asked only then), passed over
// when it reaches none of it, and refused otherwise.
func (st *kstate) definer(chain []*kust, o kobj, fields [][]string, paths func() ([][]string, error)) (string, error) {
	kind, names := o.w.Ref.Kind, o.names
	for _, k := range chain {
		for key := range k.k.CommonAnnotations {
			for _, f := range fields {
				if f[len(f)-2] == "annotations" && f[len(f)-1] == key {
					return "", fmt.Errorf("%w: %s: commonAnnotations sets %s on every object it builds, not only on pod templates; edit it by hand", ErrKustomize, k.file, key)
				}
			}
		}
		//lint:ignore SA1019 kustomizations in use still have it, and kustomize reads it
		labels := labelMaps(k.k.CommonLabels)
		for _, l := range k.k.Labels {
			labels = append(labels, l.Pairs)
		}
		for _, ls := range labels {
			for key := range ls {
				for _, f := range fields {
					if f[len(f)-2] == "labels" && f[len(f)-1] == key {
						return "", fmt.Errorf("%w: %s: labels set %s on every object it builds; edit it by hand", ErrKustomize, k.file, key)
					}
				}
			}
		}
		type src struct {
			file, inline string
			index        int // in patches:, -1 for the deprecated lists
			target       *types.Selector
			json         bool
		}
		// in kustomize's order: it moves patchesJson6902, then
		// patchesStrategicMerge, after patches (FixKustomization)
		var srcs []src
		for i, p := range k.k.Patches {
			s := src{inline: p.Patch, target: p.Target, index: i}
			if p.Path != "" {
				s = src{file: path.Join(k.dir, p.Path), target: p.Target}
			}
			srcs = append(srcs, s)
		}
		//lint:ignore SA1019 kustomizations in use still have it, and kustomize reads it
		for _, p := range k.k.PatchesJson6902 {
			s := src{inline: p.Patch, target: p.Target, json: true, index: -1}
			if p.Path != "" {
				s = src{file: path.Join(k.dir, p.Path), target: p.Target, json: true}
			}
			srcs = append(srcs, s)
		}
		//lint:ignore SA1019 kustomizations in use still have it, and kustomize reads it
		for _, p := range k.k.PatchesStrategicMerge {
			if strings.Contains(string(p), "\n") {
				srcs = append(srcs, src{inline: string(p), index: -1})
			} else {
				srcs = append(srcs, src{file: path.Join(k.dir, string(p))})
			}
		}
		// the last patch applied wins
		for i := len(srcs) - 1; i >= 0; i-- {
			s := srcs[i]
			if s.target != nil {
				hit, err := o.selectedBy(s.target)
				if err != nil {
					where := k.file
					if s.file != "" {
						where = s.file
					}
					return "", fmt.Errorf("%w: %s: the target of the patch %s: %w", ErrKustomize, k.file, where, err)
				}
				if !hit {
					continue
				}
			}
			where := s.file
			b, ok := st.file(s.file)
			if s.file == "" {
				where, b, ok = k.file+" (inline patch)", []byte(s.inline), true
			}
			if !ok {
				continue
			}
			ps, err := splice.Parse(b)
			if err != nil {
				return "", fmt.Errorf("%w: %s: %w", ErrKustomize, where, err)
			}
			for _, doc := range ps.Docs {
				if len(doc.Content) == 0 {
					continue
				}
				root := doc.Content[0]
				if root.Kind == yaml.SequenceNode {
					p := patchdiff.Reaches(root, fields)
					if p == "" {
						continue
					}
					if ops, ok := patchdiff.Parse(root); ok && s.file != "" {
						changed, err := paths()
						if err != nil {
							return "", err
						}
						_, held, touched := patchdiff.Holds(ops, changed)
						if held {
							return jsonPrefix + s.file, nil
						}
						if !touched {
							continue
						}
					}
					return "", fmt.Errorf("%w: %s: a JSON 6902 patch sets %s, and not as one value the edit changes; edit it by hand", ErrKustomize, where, p)
				}
				if s.json {
					continue
				}
				if s.target == nil && (splice.Str(root, "kind") != kind || !slices.Contains(names, splice.Str(splice.Lookup(root, "metadata"), "name"))) {
					continue
				}
				for _, f := range fields {
					if splice.Lookup(root, f[:len(f)-1]...) != nil && hasField(splice.Lookup(root, f[:len(f)-1]...), f[len(f)-1]) {
						if s.file == "" && s.index < 0 {
							return "", fmt.Errorf("%w: %s: an inline patch of patchesStrategicMerge sets %s; move it to patches: to have it edited", ErrKustomize, k.file, strings.Join(f, "."))
						}
						if s.file == "" {
							return fmt.Sprintf("%s%s#%d", inlinePrefix, k.file, s.index), nil
						}
						return s.file, nil
					}
				}
			}
		}
	}
	return "", nil
}

func labelMaps(m map[string]string) []map[string]string {
	if len(m) == 0 {
		return nil
	}
	return []map[string]string{m}
}

func hasField(m *yaml.Node, name string) bool {
	k, _ := splice.Field(m, name)
	return k != nil
}

// selectedBy reports whether a patch target selects the object, as
// kustomize selects (resmap Select): group, version and kind, name and
// namespace as anchored regular expressions, the name and namespace
// either original or current, and label and annotation selectors. The
// labels and annotations a patch sees are those the object has where
// the patch applies, somewhere between its file and the build: when the
// selector's answer differs between the two, it cannot be told, and
// that is an error.
func (o kobj) selectedBy(t *types.Selector) (bool, error) {
	sr, err := types.NewSelectorRegex(t)
	if err != nil {
		return false, err
	}
	if !sr.MatchGvk(o.gvk) {
		return false, nil
	}
	if !slices.ContainsFunc(o.names, sr.MatchName) {
		return false, nil
	}
	var nss []string
	for _, ns := range o.namespaces {
		nss = append(nss, resid.NewResIdWithNamespace(o.gvk, "", ns).EffectiveNamespace())
	}
	if !slices.ContainsFunc(nss, sr.MatchNamespace) {
		return false, nil
	}
	if t.LabelSelector == "" && t.AnnotationSelector == "" {
		return true, nil
	}
	var answers []bool
	for _, m := range o.meta {
		rn := yaml.NewMapRNode(nil)
		if err := rn.SetLabels(m.labels); err != nil {
			return false, err
		}
		if err := rn.SetAnnotations(m.annotations); err != nil {
			return false, err
		}
		hit, err := rn.MatchesLabelSelector(t.LabelSelector)
		if err != nil {
			return false, fmt.Errorf("labelSelector %q: %w", t.LabelSelector, err)
		}
		if hit {
			hit, err = rn.MatchesAnnotationSelector(t.AnnotationSelector)
			if err != nil {
				return false, fmt.Errorf("annotationSelector %q: %w", t.AnnotationSelector, err)
			}
		}
		answers = append(answers, hit)
	}
	if len(answers) == 0 || slices.Contains(answers, !answers[0]) {
		return false, fmt.Errorf("whether its selector (labelSelector %q, annotationSelector %q) picks %s depends on labels the build changes", t.LabelSelector, t.AnnotationSelector, o.w.Ref)
	}
	return answers[0], nil
}

// opPaths are the paths of the object, as the overlay builds it, that op
// i of ke changes: the difference it makes after the ops before it.
// Should an op not apply without those after it, the paths of the whole
// edit stand in.
func (st *kstate) opPaths(ke kedit, i int) ([][]string, error) {
	before, after, _, err := st.effect(ke, ke.e.Ops[:i+1])
	if err == nil && i > 0 {
		_, before, _, err = st.effect(ke, ke.e.Ops[:i])
	}
	if err != nil {
		if before, after, _, err = st.effect(ke, ke.e.Ops); err != nil {
			return nil, err
		}
	}
	return patchdiff.Changed(before, after), nil
}

// editJSON makes ops' change in JSON 6902 patch file: the value of each
// operation that holds one of the paths the ops change becomes what the
// ops make of it.
func (st *kstate) editJSON(ke kedit, file string, ops []workload.Op, next map[string][]byte, changed map[string][]changes.Change) error {
	before, after, _, err := st.effect(ke, ops)
	if err != nil {
		return err
	}
	paths := patchdiff.Changed(before, after)
	b, ok := next[file]
	if !ok {
		b, _ = st.file(file)
	}
	f, err := splice.NewFile(file, b, false)
	if err != nil {
		return err
	}
	if len(f.Expected) != 1 {
		return fmt.Errorf("%w: %s: %d documents", ErrKustomize, file, len(f.Expected))
	}
	var cs []changes.Change
	step := splice.Step{Name: "edit the JSON 6902 patch", Run: func(d *splice.Doc) error {
		jops, ok := patchdiff.Parse(d.Root)
		at, held, _ := patchdiff.Holds(jops, paths)
		if !ok || !held {
			return d.Fail(d.Root, "", fmt.Errorf("%w: the patch does not hold what the edit changes", ErrKustomize))
		}
		for i, idx := range at {
			name := patchdiff.Pointer(paths[i])
			v := patchdiff.Lookup(after, paths[i])
			_, vn := splice.Field(d.Root.Content[idx], "value")
			if v == nil || v.Kind != yaml.ScalarNode {
				return d.Fail(vn, name, fmt.Errorf("%w: the edit makes it other than one value", ErrKustomize))
			}
			old := vn.Value
			if _, err := d.ReplaceScalar(vn, v.Value, name, splice.ScalarOpts{AsString: v.Tag == "!!str"}); err != nil {
				return err
			}
			d.Record(name, old, v.Value)
			cs = append(cs, changes.Change{Workload: ke.e.Workload, Field: name, Old: old, New: v.Value})
		}
		return nil
	}}
	if _, _, err := f.EditDoc(0, []splice.Step{step}); err != nil {
		return err
	}
	if cur, ok := f.Result(); ok {
		next[file] = cur
		changed[file] = append(changed[file], cs...)
	}
	return nil
}

// editDoc applies ops to the document of file that defines the object
// (a resource file or a strategic-merge patch).
func (st *kstate) editDoc(ke kedit, file string, ops []workload.Op, names []string, next map[string][]byte, changed map[string][]changes.Change) error {
	b, ok := next[file]
	if !ok {
		b, ok = st.file(file)
	}
	if !ok {
		return fmt.Errorf("%w: %s: not read", ErrKustomize, file)
	}
	fe, err := workload.NewFileEdit(file, b, false)
	if err != nil {
		return err
	}
	w := workload.Workload{}
	var only []int // the documents of the kind
	var objs []usage.Ref
	for i, d := range fe.Expected {
		var obj usage.Ref
		ok := len(d.Content) > 0
		if ok {
			obj, ok = objectOf(d.Content[0], ke.o.service)
		}
		objs = append(objs, obj)
		if ok && obj.Kind == ke.e.Workload.Kind {
			only = append(only, i)
		}
		if ok && obj.Kind == ke.e.Workload.Kind && slices.Contains(names, obj.Name) {
			w.Ref, w.Line = workload.InObject(obj, ke.o.service), fe.Lines[i]
			break
		}
	}
	if w.Ref.Kind == "" && len(only) == 1 && file != ke.o.origin {
		// a patch with a target applies whatever name it has
		w.Ref, w.Line = workload.InObject(objs[only[0]], ke.o.service), fe.Lines[only[0]]
	}
	if w.Ref.Kind == "" {
		return fmt.Errorf("%w: %s: no %s named %s", workload.ErrNotFound, file, ke.e.Workload.Kind, strings.Join(names, " or "))
	}
	if _, err := fe.Apply(workload.Edit{Workload: w.Ref, Ops: ops}, w); err != nil {
		return err
	}
	if f, ok := fe.Changed(); ok {
		next[file] = f.New
		changed[file] = append(changed[file], f.Changes...)
	}
	return nil
}

// effect applies ops to the workload of ke as the overlay builds it, and
// returns its object before and after, with the changes said.
func (st *kstate) effect(ke kedit, ops []workload.Op) (before, after *yaml.Node, cs []changes.Change, err error) {
	out, err := ke.k.output()
	if err != nil {
		return nil, nil, nil, err
	}
	fe, err := workload.NewFileEdit(ke.k.file, out, true)
	if err != nil {
		return nil, nil, nil, err
	}
	idx, err := fe.Find(ke.e.Workload, 0)
	if err != nil {
		return nil, nil, nil, err
	}
	before = splice.Clone(fe.Expected[idx].Content[0])
	w := ke.o.w
	w.Line = fe.Lines[idx]
	if _, err := fe.Apply(workload.Edit{Workload: ke.e.Workload, Ops: ops}, w); err != nil {
		return nil, nil, nil, err
	}
	return before, fe.Expected[idx].Content[0], fe.Changes, nil
}

// newPatch writes ops as new patches in the overlay and adds them to its
// patches: a strategic-merge patch for the fields, and a JSON 6902 patch
// for the items of lists a strategic merge replaces whole (a container's
// args): a strategic-merge patch would pin the base's other arguments,
// so that a later change of the base never reached the overlay.
func (st *kstate) newPatch(ke kedit, k *kust, ops []workload.Op, next map[string][]byte, changed map[string][]changes.Change) error {
	// What the ops make of the built object is what the patches must make.
	before, after, cs, err := st.effect(ke, ops)
	if err != nil {
		return err
	}
	diff, ok := patchdiff.Strategic(before, after)
	if !ok {
		return nil
	}
	jops := patchdiff.Split(before, after, diff)
	// A patch finds its object by the id it has where the patch applies:
	// after the kustomizations k includes and its components, before k's
	// own namePrefix and namespace.
	full := st.ix.withComponents(st.ix.chain(ke.k, ke.o.origin))
	i := slices.Index(full, k)
	if i < 0 {
		return fmt.Errorf("%w: %s does not include %s", ErrKustomize, k.dir, ke.o.origin)
	}
	inner := full[i+1:]
	name, ns := rename(inner, ke.o.name), ke.o.namespace
	for j := len(inner) - 1; j >= 0; j-- {
		if inner[j].k.Namespace != "" {
			ns = inner[j].k.Namespace
		}
	}
	base := strings.ToLower(ke.e.Workload.Kind) + "-" + workload.InObject(usage.Ref{Name: ke.o.name}, ke.o.service).Name
	type entry struct {
		rel    string
		target [][2]string
	}
	var entries []entry
	write := func(prefix string, text []byte, target [][2]string, mine func(changes.Change) bool) {
		rel := st.freeName(k, next, prefix+base)
		f := path.Join(k.dir, rel)
		next[f] = text
		for _, c := range cs {
			if mine(c) {
				c.Workload = ke.e.Workload
				changed[f] = append(changed[f], c)
			}
		}
		entries = append(entries, entry{rel: rel, target: target})
	}
	inJSON := jsonLists(jops)
	if len(diff.Content) > 0 {
		text, err := smpPatch(before, diff, ke.e.Workload.Kind, name, ns)
		if err != nil {
			return err
		}
		write("gpu-rightsizing-", []byte(newPatchHeader+text), nil, func(c changes.Change) bool { return len(jops) == 0 || !inJSON(c) })
	}
	if len(jops) > 0 {
		text, err := yaml.NewRNode(patchdiff.Node(jops)).String()
		if err != nil {
			return err
		}
		target := [][2]string{{"kind", ke.e.Workload.Kind}, {"name", name}}
		if g, _, ok := strings.Cut(splice.Str(before, "apiVersion"), "/"); ok {
			target = append([][2]string{{"group", g}}, target...)
		}
		if ns != "" {
			target = append(target, [2]string{"namespace", ns})
		}
		write("gpu-rightsizing-args-", []byte(newPatchHeader+jsonPatchHeader+text), target, func(c changes.Change) bool { return len(diff.Content) == 0 || inJSON(c) })
	}

	kb, ok := next[k.file]
	if !ok {
		kb, _ = st.file(k.file)
	}
	kf, err := splice.NewFile(k.file, kb, false)
	if err != nil {
		return err
	}
	if len(kf.Expected) != 1 {
		return fmt.Errorf("%w: %s: %d documents", ErrKustomize, k.file, len(kf.Expected))
	}
	var steps []splice.Step
	for _, e := range entries {
		steps = append(steps, splice.Step{Name: "add " + e.rel + " to patches", Run: func(d *splice.Doc) error {
			return d.AppendPatch(e.rel, e.target...)
		}})
		changed[k.file] = append(changed[k.file], changes.Change{Field: "patches", New: "path: " + e.rel})
	}
	if _, _, err := kf.EditDoc(0, steps); err != nil {
		return err
	}
	next[k.file], _ = kf.Result()
	return nil
}

// smpPatch is the strategic-merge patch diff of the object before, named
// as the patch finds it.
func smpPatch(before, diff *yaml.Node, kind, name, ns string) (string, error) {
	patch := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
	scalar := func(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v} }
	md := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{scalar("name"), scalar(name)}}
	if ns != "" {
		md.Content = append(md.Content, scalar("namespace"), scalar(ns))
	}
	patch.Content = append(patch.Content,
		scalar("apiVersion"), scalar(splice.Str(before, "apiVersion")),
		scalar("kind"), scalar(kind),
		scalar("metadata"), md)
	for i := 0; i+1 < len(diff.Content); i += 2 {
		if diff.Content[i].Value == "metadata" {
			// merge with the name above
			md.Content = append(md.Content, diff.Content[i+1].Content...)
			continue
		}
		patch.Content = append(patch.Content, diff.Content[i], diff.Content[i+1])
	}
	return yaml.NewRNode(patch).String()
}

// jsonLists tells the changes that JSON 6902 operations ops make: those
// of the lists they change items of (a change's field ends in the list's
// name, as spec.template.spec.containers[vllm].args does).
func jsonLists(ops []patchdiff.Op) func(changes.Change) bool {
	lists := map[string]bool{}
	for _, op := range ops {
		p := op.Path
		if n := len(p); n > 0 && op.Op != "test" {
			if _, err := strconv.Atoi(p[n-1]); err == nil && n > 1 {
				lists[p[n-2]] = true
			} else {
				lists[p[n-1]] = true
			}
		}
	}
	return func(c changes.Change) bool {
		f := c.Field
		if i := strings.LastIndex(f, "."); i >= 0 {
			f = f[i+1:]
		}
		return lists[f]
	}
}

// freeName is a file name in k's directory that neither the checkout
// nor the files written so far hold: base.yaml, else base-2.yaml, ...
func (st *kstate) freeName(k *kust, next map[string][]byte, base string) string {
	rel := base + ".yaml"
	for n := 2; ; n++ {
		_, taken := st.file(path.Join(k.dir, rel))
		if _, t2 := next[path.Join(k.dir, rel)]; !taken && !t2 {
			return rel
		}
		rel = fmt.Sprintf("%s-%d.yaml", base, n)
	}
}

// newPatchHeader starts every patch file the editor writes.
const newPatchHeader = "# Written by the GPU rightsizing recommender; the pull request that adds it says why.\n"

// jsonPatchHeader says what a JSON 6902 patch of the editor does, for
// whoever reads it in the pull request or after.
const jsonPatchHeader = "# It replaces only the list items it changes; each test guards what the base holds there,\n" +
	"# so that kustomize build fails, instead of keeping an old copy, once the base changes it.\n"

// prove writes next into st.fs over the files there (the original ones
// and those of the edits proven so far), builds every overlay that reads
// one of them, and checks each against what the edits in kes intend.
// An overlay alike to one built before it is checked against that one's
// build, renamed, and built only when that does not match.
// When it finds a difference it puts st.fs back as it was.
func (st *kstate) prove(next map[string][]byte, kes []kedit) (err error) {
	prior := map[string][]byte{}
	for p, b := range next {
		full := path.Join(buildRoot, p)
		if old, rerr := st.fs.ReadFile(full); rerr == nil {
			prior[p] = old
		}
		if err := st.fs.WriteFile(full, b); err != nil {
			return err
		}
	}
	defer func() {
		if err == nil {
			return
		}
		for p := range next {
			full := path.Join(buildRoot, p)
			if old, ok := prior[p]; ok {
				_ = st.fs.WriteFile(full, old)
			} else {
				_ = st.fs.RemoveAll(full)
			}
		}
	}()
	changed := slices.Sorted(maps.Keys(next))
	ws := wants{}
	// each root's edits, found once: a root looking through all of them
	// made the proof quadratic in the overlays of one base
	byRoot := map[*kust][]kedit{}
	for _, ke := range kes {
		byRoot[ke.k] = append(byRoot[ke.k], ke)
	}
	var todo []*kust
	for _, k := range st.ix.kusts {
		if k.err != nil && !k.component() && (st.ix.reads(k, changed) || slices.ContainsFunc(changed, func(f string) bool { return under(f, k.dir) })) {
			// An overlay that does not build cannot show what the edit
			// does to it: no edit of a file it may read is proven.
			return fmt.Errorf("%w: %s may read a file the edit changes, and it does not build, so what the edit does to it cannot be proven", ErrKustomize, k.file)
		}
		if k.err != nil || !k.root || k.component() || !st.ix.reads(k, changed) {
			// kustomize reads only below the directories of a
			// kustomization and of those it includes (load restrictions
			// root-only; loose ones name the files beyond): one that
			// reads no changed file builds the same. What is included
			// is built as part of the roots that include it.
			continue
		}
		todo = append(todo, k)
	}
	return st.proveAll(todo, byRoot, ws, changed)
}

// proveAll proves the roots todo, in order, each against its edits in
// byRoot. Overlays alike but for their namespace are predicted from the
// first of them (alike.go), which comes before the others.
func (st *kstate) proveAll(todo []*kust, byRoot map[*kust][]kedit, ws wants, changed []string) error {
	twins := st.twins(todo, changed)
	reps := map[*kust]resmap.ResMap{}
	for _, tw := range twins {
		reps[tw.rep] = nil
	}
	for _, k := range todo {
		if tw, ok := twins[k]; ok && reps[tw.rep] != nil {
			var want []*yaml.Node
			if mine := byRoot[k]; len(mine) > 0 {
				var err error
				if want, err = ws.of(k, mine); err != nil {
					return err
				}
			}
			if predicted(k, tw, reps[tw.rep], want) {
				continue
			}
		}
		rm, err := st.proveRoot(k, byRoot[k], ws)
		if err != nil {
			return err
		}
		if _, ok := reps[k]; ok {
			reps[k] = rm
		}
	}
	return nil
}

// proveRoot builds root k from st.fs and checks it against what the
// edits mine, those for k, intend: exactly what their ops make of its old
// output (found through ws), or, with none, the same bytes. It returns the
// build, which overlays alike to k are checked against.
func (st *kstate) proveRoot(k *kust, mine []kedit, ws wants) (resmap.ResMap, error) {
	rm, err := st.ix.clock.run(st.fs, k.dir, k.loose)
	if err != nil {
		return nil, fmt.Errorf("%w: after the edit, %s does not build: %w", ErrKustomize, k.dir, err)
	}
	if len(mine) == 0 {
		if sameHeld(k.rm, rm) {
			return rm, nil
		}
		old, err := k.output()
		if err != nil {
			return nil, err
		}
		out, err := rm.AsYaml()
		if err != nil {
			return nil, fmt.Errorf("%w: after the edit, %s does not build: %w", ErrKustomize, k.dir, err)
		}
		if !bytes.Equal(out, old) {
			return nil, fmt.Errorf("%w: the edit changes the output of %s, which it is not for: %s", ErrKustomize, k.dir, splice.FirstDiff(old, out))
		}
		return rm, nil
	}
	want, err := ws.of(k, mine)
	if err != nil {
		return nil, err
	}
	if builtAsIntended(rm, want) {
		return rm, nil
	}
	// What kustomize writes goes through JSON, which may spell a value
	// otherwise than the tree it holds (a number, a merge key): the
	// written output decides, and says where it differs.
	out, err := rm.AsYaml()
	if err != nil {
		return nil, fmt.Errorf("%w: after the edit, %s does not build: %w", ErrKustomize, k.dir, err)
	}
	got, err := splice.Parse(out)
	if err != nil {
		return nil, fmt.Errorf("%w: the output of %s does not parse: %w", ErrKustomize, k.dir, err)
	}
	if len(got.Docs) != len(want) {
		return nil, fmt.Errorf("%w: %s builds %d objects instead of %d", ErrKustomize, k.dir, len(got.Docs), len(want))
	}
	for i, d := range got.Docs {
		if m := splice.CompareBuilt(want[i], d, ""); m != nil {
			return nil, fmt.Errorf("%w: %s builds something else than intended: object %d, %w", ErrKustomize, k.dir, i+1, m)
		}
	}
	return rm, nil
}

// builtAsIntended reports whether the objects of a build, as kustomize
// holds them, are the documents of want, in order. The old output want
// was made from is kustomize's written output, which its JSON round trip
// has settled, and the ops write strings: a tree that matches it renders
// to the same output, so a match proves the edit without rendering the
// build and parsing it again; anything else is decided on the rendering.
func builtAsIntended(rm resmap.ResMap, want []*yaml.Node) bool {
	return builtMatches(rm, want, func(n *yaml.Node) (*yaml.Node, bool) { return n, true })
}

// builtMatches reports whether the objects of rm, each seen through see,
// are the documents of want, in order; see says false of an object that
// cannot stand for its document.
func builtMatches(rm resmap.ResMap, want []*yaml.Node, see func(*yaml.Node) (*yaml.Node, bool)) bool {
	rs := rm.Resources()
	if len(rs) != len(want) {
		return false
	}
	for i, r := range rs {
		w := want[i]
		if w.Kind == yaml.DocumentNode && len(w.Content) == 1 {
			w = w.Content[0]
		}
		n, ok := see(r.YNode())
		if !ok || splice.CompareBuilt(w, n, "") != nil {
			return false
		}
	}
	return true
}

// editInline applies ops to the inline patch of entry #index of the
// patches of kustomization file kf: the patch text is edited like a file
// of its own, and the block scalar that holds it is replaced line by
// line, with its indentation. Only a literal block (|) is edited.
func (st *kstate) editInline(ke kedit, kf string, index int, ops []workload.Op, names []string, next map[string][]byte, changed map[string][]changes.Change) error {
	b, ok := next[kf]
	if !ok {
		b, _ = st.file(kf)
	}
	fe, err := splice.NewFile(kf, b, false)
	if err != nil {
		return err
	}
	if len(fe.Expected) != 1 {
		return fmt.Errorf("%w: %s: %d documents", ErrKustomize, kf, len(fe.Expected))
	}
	name := fmt.Sprintf("patches[%d].patch", index)
	var inner []changes.Change
	step := splice.Step{Name: "edit " + name, Run: func(d *splice.Doc) error {
		_, seq := splice.Field(d.Root, "patches")
		if seq == nil || seq.Kind != yaml.SequenceNode || index >= len(seq.Content) {
			return d.Fail(d.Root, name, fmt.Errorf("%w: no such patch", workload.ErrNotFound))
		}
		_, n := splice.Field(seq.Content[index], "patch")
		if n == nil || n.Kind != yaml.ScalarNode {
			return d.Fail(seq.Content[index], name, fmt.Errorf("%w: no patch text", workload.ErrNotFound))
		}
		if n.Style&yaml.LiteralStyle == 0 {
			return d.Fail(n, name, fmt.Errorf("%w: an inline patch that is not a literal block (|)", splice.ErrUnsupported))
		}
		pe, err := workload.NewFileEdit(kf+": "+name, []byte(n.Value), true)
		if err != nil {
			return d.Fail(n, name, err)
		}
		w := workload.Workload{}
		for i, doc := range pe.Expected {
			if len(doc.Content) == 0 {
				continue
			}
			if obj, ok := objectOf(doc.Content[0], ke.o.service); ok && obj.Kind == ke.e.Workload.Kind && slices.Contains(names, obj.Name) {
				w.Ref, w.Line = workload.InObject(obj, ke.o.service), pe.Lines[i]
			}
		}
		if w.Ref.Kind == "" {
			return d.Fail(n, name, fmt.Errorf("%w: no %s named %s in the patch", workload.ErrNotFound, ke.e.Workload.Kind, strings.Join(names, " or ")))
		}
		if _, err := pe.Apply(workload.Edit{Workload: w.Ref, Ops: ops}, w); err != nil {
			return err
		}
		f, ok := pe.Changed()
		if !ok {
			return nil
		}
		inner = f.Changes
		return d.ReplaceBlock(n, name, f.New)
	}}
	if _, _, err := fe.EditDoc(0, []splice.Step{step}); err != nil {
		return err
	}
	if cur, ok := fe.Result(); ok {
		next[kf] = cur
		for _, c := range inner {
			c.Field = name + ": " + c.Field
			changed[kf] = append(changed[kf], c)
		}
	}
	return nil
}
