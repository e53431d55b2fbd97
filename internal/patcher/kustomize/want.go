package kustomize

import (
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// What a proof expects of each root it builds: the ops of the root's
// edits applied to its old output. Overlays of one base each build the
// base's objects under a name or namespace of their own, and when they
// all want the same change of the base's document the same ops would be
// applied to outputs that differ only there, once per overlay. An op is
// a function of its object's fields but its own name and namespace (ops
// never change what a document defines, and read only the pods and the
// labels): so the ops are applied once per distinct output, and an
// output that differs from one seen only in the names and namespaces of
// its objects expects what was expected of that one, under its own
// names. Every root is still built and compared with its expectation.

// wants holds, by the edits a root asks for, the first output they were
// applied to and what they made of it.
type wants map[string]wanted

type wanted struct {
	old, want []*yaml.Node // documents
	docs      []int        // the document each edit found
}

// of returns the documents k's build must have once the edits mine are
// made: what their ops make of k's rendered output.
func (ws wants) of(k *kust, mine []kedit) ([]*yaml.Node, error) {
	if want, ok := ws.ofHeld(k, mine); ok {
		return want, nil
	}
	out, err := k.output()
	if err != nil {
		return nil, err
	}
	fe, err := workload.NewFileEdit(k.dir+" (kustomize build)", out, true)
	if err != nil {
		return nil, err
	}
	docs := make([]int, len(mine))
	for i, ke := range mine {
		if docs[i], err = fe.Find(ke.e.Workload, ke.o.w.Line); err != nil {
			return nil, err
		}
	}
	key := wantKey(mine, docs)
	if w, ok := ws[key]; ok {
		if want, ok := w.renamed(fe.Expected); ok {
			return want, nil
		}
	}
	old := make([]*yaml.Node, len(fe.Expected))
	for i, d := range fe.Expected {
		old[i] = splice.Clone(d)
	}
	for _, ke := range mine {
		if _, err := fe.Apply(workload.Edit{Workload: ke.e.Workload, Ops: ke.e.Ops}, ke.o.w); err != nil {
			return nil, err
		}
	}
	if _, ok := ws[key]; !ok {
		ws[key] = wanted{old: old, want: fe.Expected, docs: docs}
	}
	return fe.Expected, nil
}

// ofHeld is of without rendering k: when discovery read k from the
// trees kustomize holds (settled: the rendering is those trees with their
// keys sorted), each edit finds its object there as Find finds it in the
// rendering, and an output seen before for the same edits is the trees
// but for names, what was expected of that one, renamed. ok is false
// otherwise: of renders k and decides on the text.
func (ws wants) ofHeld(k *kust, mine []kedit) ([]*yaml.Node, bool) {
	if k.held == nil {
		return nil, false
	}
	docs := make([]int, len(mine))
	for i, ke := range mine {
		d, ok := workload.FindIn(k.held, ke.e.Workload)
		if !ok {
			return nil, false
		}
		docs[i] = d
	}
	w, ok := ws[wantKey(mine, docs)]
	if !ok {
		return nil, false
	}
	held := make([]*yaml.Node, len(k.held))
	for i, n := range k.held {
		held[i] = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}}
	}
	return w.renamed(held)
}

// wantKey says which edits, of which documents of the output: the same
// document of the same file, the same ops, in the same place.
func wantKey(mine []kedit, docs []int) string {
	var b strings.Builder
	for i, ke := range mine {
		for _, s := range []string{ke.o.origin, ke.o.name, ke.o.service, ke.e.Workload.Kind, opsKey(ke.e.Ops), strconv.Itoa(docs[i])} {
			b.WriteString(s)
			b.WriteByte(0)
		}
	}
	return b.String()
}

// renamed returns what w expects of an output whose documents docs are
// w.old's but for the names and namespaces of their objects, under
// those names; ok is false when they differ otherwise. Keys are matched
// by name, not place: two renderings sort them alike, so that is the
// same for them, and trees kustomize holds (ofHeld) compare with a
// rendering as theirs would.
func (w wanted) renamed(docs []*yaml.Node) (want []*yaml.Node, ok bool) {
	if len(docs) != len(w.old) {
		return nil, false
	}
	want = make([]*yaml.Node, len(docs))
	for i, d := range docs {
		c := splice.Clone(d)
		ids, oldIDs := identity(c), identity(w.old[i])
		if len(ids) != len(oldIDs) {
			return nil, false
		}
		mine := make([]yaml.Node, len(ids))
		for j, n := range ids {
			if oldIDs[j] == nil || n == nil {
				if (oldIDs[j] == nil) != (n == nil) {
					return nil, false
				}
				continue
			}
			if n.ShortTag() != oldIDs[j].ShortTag() {
				return nil, false
			}
			mine[j], n.Value = *n, oldIDs[j].Value
		}
		if splice.CompareBuilt(w.old[i], c, "") != nil {
			return nil, false
		}
		want[i] = splice.Clone(w.want[i])
		for j, n := range identity(want[i]) {
			if n != nil {
				n.Value, n.Tag, n.Style = mine[j].Value, mine[j].Tag, mine[j].Style
			}
		}
	}
	return want, true
}

// identity returns the scalars of a document's metadata.name and
// metadata.namespace (nil where missing).
func identity(doc *yaml.Node) []*yaml.Node {
	ids := make([]*yaml.Node, 2)
	if doc == nil || len(doc.Content) == 0 {
		return ids
	}
	_, md := splice.Field(doc.Content[0], "metadata")
	if md == nil || md.Kind != yaml.MappingNode {
		return ids
	}
	for i, f := range []string{"name", "namespace"} {
		if _, v := splice.Field(md, f); v != nil && v.Kind == yaml.ScalarNode {
			ids[i] = v
		}
	}
	return ids
}
