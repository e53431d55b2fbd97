package kustomize

import (
	"maps"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
)

// Overlays alike but for their namespace. A fleet often has one overlay
// per team: the same base, the same patches, and the team's namespace in
// the kustomization, its labels and its patches. Building each of them
// again to prove an edit of the base costs as much as discovery did. So
// the proof builds the first of each such set (its representative) and
// predicts the others: an overlay's build is the representative's with
// the representative's namespace replaced by its own, in every scalar.
//
// The prediction is made only where it is a fact about the inputs, and
// checked on discovery's builds (docs/design.md §10, invariant 2):
//
//   - the overlay includes one base and sets only its namespace,
//     labels, annotations and patches without targets or options: the
//     transformers that copy the namespace as a value and match objects
//     by ids, which an edit never changes;
//   - its files (kustomization, patches) are the representative's with
//     one namespace written for the other, byte for byte; neither
//     namespace is in the other's files or in any file the base reads;
//   - the namespaces are DNS labels of one length, not "default";
//   - before the edit, discovery's build of the overlay was the
//     representative's with the namespace replaced.
//
// Anything else is built, and so is an overlay whose prediction does
// not match what its edits intend.

// twin is a root proven through rep's build, whose namespace from is the
// root's to.
type twin struct {
	rep      *kust
	from, to string
}

// dnsLabel is what kustomize and Kubernetes take for a namespace name.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// alike is what makes roots alike: a base and the skeleton of their own
// files, with the first root of the set and its files' text.
type alike struct {
	rep  *kust
	text string
}

// twins returns the roots of todo, in order, that the proof predicts
// from an earlier one's build. st.fs holds the files as edited; changed
// are those the proof adds.
func (st *kstate) twins(todo []*kust, changed []string) map[*kust]twin {
	out := map[*kust]twin{}
	closures := map[string]string{}
	var paths []string // sorted, read once for every base
	sets := map[string]alike{}
	for _, k := range todo {
		base, ns, text, skel, ok := st.skeleton(k)
		if !ok {
			continue
		}
		c, seen := closures[base]
		if !seen {
			if paths == nil {
				all := maps.Clone(st.ix.files)
				for _, p := range append(slices.Collect(maps.Keys(st.cur)), changed...) {
					all[p] = nil
				}
				paths = slices.Sorted(maps.Keys(all))
			}
			c = st.closure(base, paths)
			closures[base] = c
		}
		if strings.Contains(c, ns) {
			continue
		}
		key := base + "\x00" + skel
		set, ok := sets[key]
		if !ok {
			sets[key] = alike{rep: k, text: text}
			continue
		}
		from := set.rep.k.Namespace
		if len(from) != len(ns) || from == ns || strings.Contains(set.text, ns) || strings.Contains(text, from) ||
			!sameBut(set.rep.rm, k.rm, from, ns) {
			continue
		}
		out[k] = twin{rep: set.rep, from: from, to: ns}
	}
	return out
}

// skeleton reads root k's own files as edited: its base directory and
// namespace, their text, and the text with the namespace left out. ok
// is false when k is not of the kind the proof predicts.
func (st *kstate) skeleton(k *kust) (base, ns, text, skel string, ok bool) {
	if k.err != nil || !k.root || k.component() || k.loose || k.rm == nil || len(k.dirs) != 1 {
		return "", "", "", "", false
	}
	kb, err := st.fs.ReadFile(buildRoot + "/" + k.file)
	if err != nil {
		return "", "", "", "", false
	}
	var now types.Kustomization
	if yaml.Unmarshal(kb, &now) != nil {
		return "", "", "", "", false
	}
	now.FixKustomization()
	ns = now.Namespace
	if !dnsLabel.MatchString(ns) || ns == "default" || len(now.Resources) != 1 || now.Namespace != k.k.Namespace {
		return "", "", "", "", false
	}
	base = path.Join(k.dir, now.Resources[0])
	if base != k.dirs[0] || st.ix.byDir[base] == nil {
		return "", "", "", "", false
	}
	files, ok := ownFiles(k, now)
	if !ok {
		return "", "", "", "", false
	}
	var t, s strings.Builder
	for _, f := range files {
		b, err := st.fs.ReadFile(buildRoot + "/" + f)
		if err != nil || strings.ContainsAny(string(b), "\x00\x01") {
			return "", "", "", "", false
		}
		rel := strings.TrimPrefix(f, k.dir+"/")
		t.WriteString(string(b) + "\x01")
		s.WriteString(rel + "\x01" + strings.ReplaceAll(string(b), ns, "\x00") + "\x01")
	}
	return base, ns, t.String(), s.String(), true
}

// ownFiles are the files of k, its kustomization now as edited, when it
// sets nothing but its namespace, one resource, labels, annotations and
// patches without target or options: its kustomization and its patches.
func ownFiles(k *kust, now types.Kustomization) ([]string, bool) {
	rest := now
	rest.TypeMeta, rest.Namespace, rest.Resources = types.TypeMeta{}, "", nil
	//lint:ignore SA1019 kustomizations in use still have it, and kustomize reads it
	rest.CommonLabels, rest.Labels, rest.CommonAnnotations, rest.Patches = nil, nil, nil, nil
	if now.Kind != types.KustomizationKind || !reflect.DeepEqual(rest, types.Kustomization{}) {
		return nil, false
	}
	files := []string{k.file}
	for _, p := range now.Patches {
		if p.Target != nil || p.Options != nil {
			return nil, false
		}
		if p.Path != "" {
			f := path.Join(k.dir, p.Path)
			if !local(p.Path) || !under(f, k.dir) {
				return nil, false
			}
			files = append(files, f)
		}
	}
	return files, true
}

// closure is the text, as edited, of every file of paths that building
// the kustomization of dir may read: below its directory and those of
// what it includes, and the files they name beyond.
func (st *kstate) closure(dir string, paths []string) string {
	k := st.ix.byDir[dir]
	var dirs, outside []string
	st.ix.anyIncluded(k, func(k *kust) bool {
		dirs, outside = append(dirs, k.dir), append(outside, k.outside...)
		return false
	})
	var b strings.Builder
	for _, p := range paths {
		if slices.Contains(outside, p) || slices.ContainsFunc(dirs, func(d string) bool { return under(p, d) }) {
			if c, err := st.fs.ReadFile(buildRoot + "/" + p); err == nil {
				b.Write(c)
				b.WriteByte('\x01')
			}
		}
	}
	return b.String()
}

// sameBut reports whether builds a and b hold the same objects, in
// order, but for from in a's scalars written as to in b's.
func sameBut(a, b resmap.ResMap, from, to string) bool {
	ra, rb := a.Resources(), b.Resources()
	if len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		x, y := ra[i].YNode(), rb[i].YNode()
		if !settled(x) || !settled(y) || splice.Compare(replaced(x, from, to), y, "") != nil {
			return false
		}
	}
	return true
}

// replaced is a copy of n with from written as to in every scalar.
func replaced(n *yaml.Node, from, to string) *yaml.Node {
	c := splice.Clone(n)
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			n.Value = strings.ReplaceAll(n.Value, from, to)
		}
		for _, x := range n.Content {
			walk(x)
		}
	}
	walk(c)
	return c
}

// predicted reports whether the edited build of twin k, the
// representative's edited build rm renamed, is what want says; with no
// edits of k, want is nil and it must be discovery's build of k.
func predicted(k *kust, tw twin, rm resmap.ResMap, want []*yaml.Node) bool {
	if want == nil {
		return sameBut(rm, k.rm, tw.from, tw.to)
	}
	return builtMatches(rm, want, func(n *yaml.Node) (*yaml.Node, bool) {
		if !settled(n) {
			return nil, false
		}
		return replaced(n, tw.from, tw.to), true
	})
}
