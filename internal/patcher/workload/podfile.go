package workload

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/patcher/changes"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// apply applies one Edit, all or nothing, to the document of workload w,
// one engine step per op, and returns the notes its ops made. The result
// of the whole Edit must also be a pod KAI accepts.
func (f *FileEdit) Apply(e Edit, w Workload) ([]Note, error) {
	idx, err := f.Find(e.Workload, w.Line)
	if err != nil {
		return nil, &located.Error{File: f.Path, Err: err}
	}
	doc, _ := f.Document(idx)
	spec := specOf(f.identified(idx), e.Workload)
	pods := spec.Edited(doc.Content[0])
	var notes []Note
	var steps []splice.Step
	for _, op := range e.Ops {
		for _, pod := range pods {
			steps = append(steps, splice.Step{Name: op.String(), Run: func(d *splice.Doc) error {
				p := &podEdit{Doc: d, pod: pod, group: len(pods) > 1, dynamo: spec.dynamo, ref: e.Workload}
				if err := op.apply(p); err != nil {
					return err
				}
				notes = append(notes, p.notes...)
				return nil
			}})
		}
	}
	fields, undo, err := f.EditDoc(idx, steps)
	if err != nil {
		return nil, err
	}
	// KAI refuses a pod that asks for a GPU in two ways at once: check the
	// result of the whole Edit, whatever the order of its ops. A batch has
	// its result only once finished: it checks then.
	if f.Batch() {
		f.kai = append(f.kai, kaiCheck{idx, spec, pods})
	} else if err := f.kaiConflicts(idx, spec, pods); err != nil {
		undo()
		return nil, err
	}
	for _, c := range fields {
		f.Changes = append(f.Changes, changes.Change{Workload: e.Workload, Field: c.Field, Old: c.Old, New: c.New, Reason: e.Reason, Definition: e.File})
	}
	return notes, nil
}

// FileEdit is a file of workloads being edited: the engine's fileEdit,
// and the changes of the edits kept so far, said for which workload.
type FileEdit struct {
	*splice.File
	Changes []changes.Change
	kai     []kaiCheck // a batch's checks of its result
	ids     [][]Identified
	idDone  []bool
}

// kaiCheck is the check of an Edit's pods against KAI, pending in a batch.
type kaiCheck struct {
	idx  int
	spec Spec
	pods []Pod
}

// kaiConflicts is kaiConflict for each of pods in document idx as it is now.
func (f *FileEdit) kaiConflicts(idx int, spec Spec, pods []Pod) error {
	doc, line0 := f.Document(idx)
	for _, pod := range pods {
		if splice.Lookup(doc.Content[0], pod.Path...) != nil {
			if n, field, err := kaiConflict(doc.Content[0], spec, pod); err != nil {
				return &located.Error{File: f.Path, Line: n.Line + line0, Field: field, Err: err}
			}
		}
	}
	return nil
}

// EditParsed runs edit on a FileEdit of b in one batch (splice.NewParsedFile)
// from s, discovery's parse of b, and proves the result with one parse of
// the file. When the batch is refused, or any of its edits fails, it runs
// edit again as EditFile does, each op proven on its own, so that what is
// refused, and why, is what EditFile says. edit must start from nothing
// each time it is called.
func EditParsed(path string, b []byte, s *splice.Stream, edit func(*FileEdit)) (*FileEdit, error) {
	if f, err := splice.NewParsedFile(path, b, s); err == nil {
		fe := &FileEdit{File: f}
		edit(fe)
		if fe.finish() == nil {
			return fe, nil
		}
	}
	return EditFile(path, b, edit)
}

// EditHeld is EditParsed from what discovery held of b (splice.Hold):
// each document edited is made again from h and proven by parsing it
// alone (splice.NewHeldFile). When the batch is refused, or any of its
// edits fails, it runs edit again as EditFile does.
func EditHeld(path string, b []byte, h *splice.Held, edit func(*FileEdit)) (*FileEdit, error) {
	if f, err := splice.NewHeldFile(path, b, h); err == nil {
		fe := &FileEdit{File: f}
		edit(fe)
		if fe.finish() == nil {
			return fe, nil
		}
	}
	return EditFile(path, b, edit)
}

// finish ends a batch: the file proven, then each Edit's pods checked
// against KAI in the result.
func (f *FileEdit) finish() error {
	if err := f.Finish(); err != nil {
		return err
	}
	for _, k := range f.kai {
		if err := f.kaiConflicts(k.idx, k.spec, k.pods); err != nil {
			return err
		}
	}
	return nil
}

// EditFile runs edit on a FileEdit of b, proven as splice.Edit proves it:
// per document, then as a whole, again as one chunk when the whole fails.
func EditFile(path string, b []byte, edit func(*FileEdit)) (*FileEdit, error) {
	var fe *FileEdit
	_, err := splice.Edit(path, b, func(f *splice.File) {
		fe = &FileEdit{File: f}
		edit(fe)
	})
	if err != nil {
		return nil, err
	}
	return fe, nil
}

func NewFileEdit(path string, b []byte, whole bool) (*FileEdit, error) {
	f, err := splice.NewFile(path, b, whole)
	if err != nil {
		return nil, err
	}
	return &FileEdit{File: f}, nil
}

// Changed returns the Changed when its bytes changed.
func (f *FileEdit) Changed() (changes.File, bool) {
	cur, ok := f.Result()
	if !ok {
		return changes.File{}, false
	}
	return changes.File{Path: f.Path, Old: f.Orig, New: cur, Changes: f.Changes, Splices: f.Splices()}, true
}

// podEdit is one workload Op at work: the engine's docEdit of the
// workload's document, plus what the op needs to know of the workload.
type podEdit struct {
	*splice.Doc
	pod   Pod  // where the pod's fields are
	group bool // one of several templates sized together
	// dynamo: a Dynamo service, whose whole GPUs are its resources.gpu
	dynamo bool
	ref    usage.Ref
	notes  []Note
}

func (p *podEdit) note(n *yaml.Node, name string, err error) {
	p.notes = append(p.notes, Note{Workload: p.ref, File: p.File, Line: n.Line + p.Line0, Field: name, Err: err})
}

// Find returns the index of the document that defines ref (ops never
// change what a document defines). A document without metadata.namespace
// matches any namespace: the caller may have filled in the default (as
// kubectl would). An exact namespace match wins; among several loose
// ones, the document that started at line (where Discover saw the
// workload) does.
func (f *FileEdit) Find(ref usage.Ref, line int) (int, error) {
	if f.Held() {
		return f.findHeld(ref, line)
	}
	cands := candidates(len(f.Expected), f.identified, ref)
	switch {
	case len(cands) == 1:
		return cands[0], nil
	case len(cands) == 0:
		return 0, fmt.Errorf("%w: %s is no longer in the file", ErrNotFound, ref)
	}
	for _, idx := range cands {
		if f.Lines[idx] == line {
			return idx, nil
		}
	}
	return 0, fmt.Errorf("%w: %s", ErrAmbiguous, ref)
}

// findHeld is Find in a file held by discovery, which is as discovery
// read it: the workload is in the document that starts at line, where
// discovery found it. Discovery keeps only the documents that ask for
// GPUs: for any other, findHeld spoils the batch, and the caller edits
// again from a parse of the file, where Find says what it finds.
func (f *FileEdit) findHeld(ref usage.Ref, line int) (int, error) {
	for idx, l := range f.Lines {
		if l != line {
			continue
		}
		if doc, _ := f.Document(idx); doc != nil && len(doc.Content) > 0 {
			if got, ok := defines(f.identified(idx), ref); ok && (got.Namespace == ref.Namespace || got.Namespace == "") {
				return idx, nil
			}
		}
		break
	}
	err := fmt.Errorf("%w: %s is not in a document discovery kept", ErrNotFound, ref)
	f.Spoil(err)
	return 0, err
}

// identified returns the workloads of expected document i, identified
// once for the file: ops never change what a document defines. A held
// document not made again has none.
func (f *FileEdit) identified(i int) []Identified {
	if f.ids == nil {
		f.ids = make([][]Identified, len(f.Expected))
		f.idDone = make([]bool, len(f.Expected))
	}
	if !f.idDone[i] {
		if d := f.Expected[i]; d != nil && len(d.Content) > 0 {
			f.ids[i] = IdentifyAll(d.Content[0])
		}
		f.idDone[i] = f.Expected[i] != nil
	}
	return f.ids[i]
}

// candidates are the documents of n, whose workloads ids says, that
// define ref: in its namespace, else in none.
func candidates(n int, ids func(int) []Identified, ref usage.Ref) []int {
	var exact, loose []int
	for i := range n {
		got, ok := defines(ids(i), ref)
		if !ok {
			continue
		}
		switch got.Namespace {
		case ref.Namespace:
			exact = append(exact, i)
		case "":
			loose = append(loose, i)
		}
	}
	if len(exact) == 0 {
		return loose
	}
	return exact
}

// FindIn returns the object of roots that defines ref when Find would
// find it without a line, one root a document: ok is false when none or
// several do (Find then needs the line, or fails).
func FindIn(roots []*yaml.Node, ref usage.Ref) (int, bool) {
	cands := candidates(len(roots), func(i int) []Identified {
		if roots[i] == nil {
			return nil
		}
		return IdentifyAll(roots[i])
	}, ref)
	if len(cands) != 1 {
		return 0, false
	}
	return cands[0], true
}

// defines returns the workload of a document's workloads ids that is ref
// but for its namespace, ok false when there is none.
func defines(ids []Identified, ref usage.Ref) (usage.Ref, bool) {
	for _, id := range ids {
		if id.Ref.Kind == ref.Kind && id.Ref.Name == ref.Name && id.Ref.Kind != "" {
			return id.Ref, true
		}
	}
	return usage.Ref{}, false
}

// specOf is how to read workload ref of a document whose workloads are
// ids: its kind's, or, for a kind with several workloads in one object,
// the one ref names.
func specOf(ids []Identified, ref usage.Ref) Spec {
	for _, id := range ids {
		if id.Ref.Kind == ref.Kind && id.Ref.Name == ref.Name {
			return id.Spec
		}
	}
	spec, _ := SpecFor(ref.Kind)
	return spec
}
