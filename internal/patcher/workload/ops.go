package workload

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Op is one small edit of a workload, built by one of the constructors
// below and composed into an Edit, in the spirit of kyaml's filters
// (yaml.SetField, AnnotationSetter). Paths are relative to where the
// workload's kind writes its pods' fields (Pod: the pod template
// spec.template for a Deployment, spec.predictor for an
// InferenceService).
type Op interface {
	fmt.Stringer
	apply(d *podEdit) error
	// Touches are the fields the op may change, as paths from the object
	// whose pods' fields are where p says: an editor that finds where a
	// field is defined (a Kustomize patch, a values file) looks there.
	Touches(p Pod) [][]string
}

// containerFields are what the ops on GPUs and vLLM flags touch: the
// containers (a serving container's field too, and the resources a
// controller gives it), and the annotation that names the one the GPU
// goes to.
func containerFields(p Pod) [][]string {
	out := [][]string{p.spec("containers"), p.spec("initContainers")}
	for _, k := range p.Serving {
		out = append(out, p.spec(k))
	}
	if p.Resources != nil {
		out = append(out, join(p.Path, p.Resources...))
	}
	return append(out, p.meta("annotations", kai.ContainerNameAnnotation))
}

func (setGPUFraction) Touches(p Pod) [][]string {
	return [][]string{p.meta("annotations", kai.FractionAnnotation)}
}

func (setGPUMemory) Touches(p Pod) [][]string {
	return [][]string{p.meta("annotations", kai.MemoryAnnotation)}
}

func (o removePodAnnotation) Touches(p Pod) [][]string {
	return [][]string{p.meta("annotations", o.key)}
}

func (setSchedulerName) Touches(p Pod) [][]string {
	return [][]string{p.spec("schedulerName")}
}

func (o setPodLabel) Touches(p Pod) [][]string {
	return [][]string{p.meta("labels", o.key)}
}

func (o setWorkloadLabel) Touches(Pod) [][]string {
	return [][]string{{"metadata", "labels", o.key}}
}

func (removeWholeGPUs) Touches(p Pod) [][]string { return containerFields(p) }
func (setWholeGPUs) Touches(p Pod) [][]string    { return containerFields(p) }
func (setVLLMUtil) Touches(p Pod) [][]string     { return containerFields(p) }

// SetGPUFraction sets the pod annotation gpu-fraction to v, a decimal
// with at most two places from 0.01 to 0.99 (KAI keeps two), written as a
// quoted string. Missing annotations:/metadata: mappings are created (a
// created metadata goes before the template's spec). It refuses a pod
// with gpu-memory, which KAI does not take together with a fraction; and
// an Edit whose result has gpu-fraction next to nvidia.com/gpu in any
// container is refused as a whole (RemoveWholeGPUs first).
func SetGPUFraction(v string) Op { return setGPUFraction{value: v} }

// SetVLLMMemoryUtilization sets --gpu-memory-utilization of the vLLM
// container that gets the pod's GPU to v, in whatever form the flag
// already has (separate argument, --flag=v, underscore spelling, inside a
// sh -c string or block scalar), or adds it: as a new
// --gpu-memory-utilization=v argument, or right after `vllm serve <model>`
// / the vllm.entrypoints module in a shell string.
// The GPU container is the one named by gpu-fraction-container-name
// (also when an earlier op of the same Edit set it); else the one that
// requests nvidia.com/gpu; else the first, where KAI puts a fraction
// (Workload.GPU.Container). Other vLLM containers, and one with
// --kv-cache-memory-bytes, are left alone with a Note.
func SetVLLMMemoryUtilization(v string) Op { return setVLLMUtil{value: v} }

// SetGPUMemory sets the pod annotation gpu-memory to mib, whole MiB
// without a suffix as KAI reads it, written as a quoted string. Like
// SetGPUFraction it creates missing mappings, and an Edit whose result has
// gpu-memory next to gpu-fraction or nvidia.com/gpu is refused.
func SetGPUMemory(mib int64) Op { return setGPUMemory{mib: mib} }

// SetSchedulerName sets the pod's spec.schedulerName.
func SetSchedulerName(name string) Op { return setSchedulerName{name: name} }

// SetPodLabel sets a label of the pod template. It refuses to change a
// label the workload's selector matches on (spec.selector.matchLabels, or
// a key of its matchExpressions).
func SetPodLabel(k, v string) Op { return setPodLabel{key: k, value: v} }

// SetWorkloadLabel sets a label of the workload itself (its
// metadata.labels), with the same checks of key and value as SetPodLabel.
// KAI reads the queue label (kai.scheduler/queue) there before the pod
// template's.
func SetWorkloadLabel(k, v string) Op { return setWorkloadLabel{key: k, value: v} }

// RemoveWholeGPUs deletes nvidia.com/gpu from the limits and requests of
// every container and init container (KAI refuses a gpu-fraction next to
// it). A limits:/requests: mapping left empty is removed, and resources:
// too when it is left empty. A fraction reaches one container only: when
// the GPU was not the first container's, the pod annotation
// gpu-fraction-container-name is set to the one that had it, and when
// several containers had GPUs the op refuses with ErrSeveralGPUContainers.
func RemoveWholeGPUs() Op { return removeWholeGPUs{} }

// RemovePodAnnotation deletes a pod annotation; an annotations: mapping
// left empty is removed, and the template's metadata: too when empty.
// From a block mapping the entry's lines go, with their comments; from a
// flow mapping the entry and one comma, and a line only when nothing but
// blanks is left on it.
func RemovePodAnnotation(k string) Op { return removePodAnnotation{key: k} }

// SetWholeGPUs sets nvidia.com/gpu: "n" in the limits of the GPU container
// (as for SetVLLMMemoryUtilization), and in its requests when they name
// nvidia.com/gpu too (Kubernetes wants them equal).
func SetWholeGPUs(n int64) Op { return setWholeGPUs{n: n} }

// template returns the mapping the pod's fields are in (Pod.Path: the
// pod template, or a KServe component) of the current parse.
func (d *podEdit) template() (*yaml.Node, error) {
	cur := d.Root
	for i, p := range d.pod.Path {
		if err := d.Editable(cur, dotted(d.pod.Path[:i])); err != nil {
			return nil, err
		}
		_, next := splice.Field(cur, p)
		if next == nil || next.Kind != yaml.MappingNode {
			return nil, d.Fail(cur, dotted(d.pod.Path[:i+1]), fmt.Errorf("%w: no pod template mapping", splice.ErrUnsupported))
		}
		cur = next
	}
	return cur, d.Editable(cur, dotted(d.pod.Path))
}

// podSpec returns the pod spec mapping: the template's spec, or the
// component itself where the pod spec is inlined.
func (d *podEdit) podSpec() (*yaml.Node, error) {
	pod, err := d.template()
	if err != nil {
		return nil, err
	}
	for i, key := range d.pod.Spec {
		_, next := splice.Field(pod, key)
		if next == nil || next.Kind != yaml.MappingNode {
			return nil, d.Fail(pod, dotted(join(d.pod.Path, d.pod.Spec[:i+1]...)), fmt.Errorf("%w: no pod spec mapping", splice.ErrUnsupported))
		}
		if err := d.Editable(next, dotted(join(d.pod.Path, d.pod.Spec[:i+1]...))); err != nil {
			return nil, err
		}
		pod = next
	}
	return pod, nil
}

// metaField is the field name of the pods' metadata field rest.
func (d *podEdit) metaField(rest ...string) string { return dotted(d.pod.meta(rest...)) }

// specField is the field name of pod spec field rest.
func (d *podEdit) specField(rest ...string) string { return dotted(d.pod.spec(rest...)) }

// metaRel is the path of the pods' metadata field rest from the mapping
// template returns.
func (d *podEdit) metaRel(rest ...string) []string { return join(d.pod.Meta, rest...) }

// servingContainer returns the serving container of the current parse,
// after checking the path to it can be edited; ok false when there is
// none.
func (d *podEdit) servingContainer() (containerRef, bool, error) {
	pod, err := d.podSpec()
	if err != nil {
		return containerRef{}, false, err
	}
	r, ok := serving(pod, d.pod.Serving)
	if !ok {
		return containerRef{}, false, nil
	}
	return r, true, d.Editable(r.item, d.containerField(r))
}

// editable checks that container r, and the path to it, can be edited.
func (d *podEdit) editable(r containerRef) error {
	if r.serving {
		_, _, err := d.servingContainer()
		return err
	}
	_, err := d.containers(r.list)
	return err
}

// containers returns the items of the pod's containers or initContainers
// list, after checking the path to them can be edited.
func (d *podEdit) containers(list string) ([]*yaml.Node, error) {
	pod, err := d.podSpec()
	if err != nil {
		return nil, err
	}
	_, s := splice.Field(pod, list)
	if s == nil {
		return nil, nil
	}
	if err := d.Editable(s, d.specField(list)); err != nil {
		return nil, err
	}
	var cs []*yaml.Node
	for _, r := range containerRefs(pod, list) {
		if err := d.Editable(r.item, d.containerField(r)); err != nil {
			return nil, err
		}
		cs = append(cs, r.c)
	}
	return cs, nil
}

type setGPUFraction struct{ value string }

func (o setGPUFraction) String() string { return fmt.Sprintf("SetGPUFraction(%q)", o.value) }

func (o setGPUFraction) apply(d *podEdit) error {
	name := d.metaField("annotations", kai.FractionAnnotation)
	tmpl, err := d.template()
	if err != nil {
		return err
	}
	if err := validFraction(o.value); err != nil {
		return d.Fail(tmpl, name, err)
	}
	if _, v := splice.Field(splice.Lookup(tmpl, d.metaRel("annotations")...), kai.MemoryAnnotation); v != nil {
		return d.Fail(v, name, fmt.Errorf("%w: the pod asks for gpu-memory, which KAI does not take together with gpu-fraction (remove it first)", ErrInvalidValue))
	}
	return d.SetString(tmpl, name, d.metaRel("annotations", kai.FractionAnnotation), o.value, splice.ScalarOpts{Quote: true, AsString: true})
}

type setGPUMemory struct{ mib int64 }

func (o setGPUMemory) String() string { return fmt.Sprintf("SetGPUMemory(%d)", o.mib) }

func (o setGPUMemory) apply(d *podEdit) error {
	name := d.metaField("annotations", kai.MemoryAnnotation)
	tmpl, err := d.template()
	if err != nil {
		return err
	}
	if o.mib < 1 {
		return d.Fail(tmpl, name, fmt.Errorf("%w: %s %d must be a positive number of MiB", ErrInvalidValue, kai.MemoryAnnotation, o.mib))
	}
	return d.SetString(tmpl, name, d.metaRel("annotations", kai.MemoryAnnotation), strconv.FormatInt(o.mib, 10), splice.ScalarOpts{Quote: true, AsString: true})
}

type setSchedulerName struct{ name string }

func (o setSchedulerName) String() string { return fmt.Sprintf("SetSchedulerName(%q)", o.name) }

var dnsNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

func (o setSchedulerName) apply(d *podEdit) error {
	name := d.specField("schedulerName")
	tmpl, err := d.template()
	if err != nil {
		return err
	}
	if !dnsNameRE.MatchString(o.name) || len(o.name) > 253 {
		return d.Fail(tmpl, name, fmt.Errorf("%w: scheduler name %q", ErrInvalidValue, o.name))
	}
	return d.SetString(tmpl, name, join(d.pod.Spec, "schedulerName"), o.name, splice.ScalarOpts{AsString: true})
}

type setPodLabel struct{ key, value string }

func (o setPodLabel) String() string { return fmt.Sprintf("SetPodLabel(%q, %q)", o.key, o.value) }

var labelValueRE = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)

// validLabel checks a label key and value as Kubernetes would have them.
func validLabel(k, v string) error {
	if k == "" || strings.ContainsAny(k, " \t\n") || len(v) > 63 || !labelValueRE.MatchString(v) {
		return fmt.Errorf("%w: label %q=%q", ErrInvalidValue, k, v)
	}
	return nil
}

func (o setPodLabel) apply(d *podEdit) error {
	name := d.metaField("labels", o.key)
	tmpl, err := d.template()
	if err != nil {
		return err
	}
	if err := validLabel(o.key, o.value); err != nil {
		return d.Fail(tmpl, name, err)
	}
	_, cur := splice.Field(splice.Lookup(tmpl, d.metaRel("labels")...), o.key)
	if cur == nil || cur.Value != o.value {
		sel := splice.Lookup(d.Root, "spec", "selector")
		if _, v := splice.Field(splice.Lookup(sel, "matchLabels"), o.key); v != nil && v.Value != o.value {
			return d.Fail(v, name, fmt.Errorf("%w: the selector matches on %s=%s; changing it would orphan the pods", ErrInvalidValue, o.key, v.Value))
		}
		if _, exprs := splice.Field(sel, "matchExpressions"); exprs != nil && exprs.Kind == yaml.SequenceNode {
			for _, x := range exprs.Content {
				if _, k := splice.Field(resolved(x), "key"); k != nil && k.Value == o.key {
					return d.Fail(k, name, fmt.Errorf("%w: the selector's matchExpressions use the label %s; changing it could orphan the pods", ErrInvalidValue, o.key))
				}
			}
		}
	}
	return d.SetString(tmpl, name, d.metaRel("labels", o.key), o.value, splice.ScalarOpts{AsString: true})
}

type setWorkloadLabel struct{ key, value string }

func (o setWorkloadLabel) String() string {
	return fmt.Sprintf("SetWorkloadLabel(%q, %q)", o.key, o.value)
}

func (o setWorkloadLabel) apply(d *podEdit) error {
	name := "metadata.labels." + o.key
	if err := validLabel(o.key, o.value); err != nil {
		return d.Fail(d.Root, name, err)
	}
	return d.SetString(d.Root, name, []string{"metadata", "labels", o.key}, o.value, splice.ScalarOpts{AsString: true})
}

type removePodAnnotation struct{ key string }

func (o removePodAnnotation) String() string { return fmt.Sprintf("RemovePodAnnotation(%q)", o.key) }

func (o removePodAnnotation) apply(d *podEdit) error {
	name := d.metaField("annotations", o.key)
	tmpl, err := d.template()
	if err != nil {
		return err
	}
	// The entries on the way to the annotation, each in its parent: the
	// highest one it leaves empty goes (the template's own fields stay).
	type entry struct{ parent, k, v *yaml.Node }
	var path []entry
	cur := tmpl
	for _, key := range d.metaRel("annotations", o.key) {
		k, v := splice.Field(cur, key)
		if k == nil {
			return nil
		}
		path = append(path, entry{parent: cur, k: k, v: v})
		cur = v
	}
	for _, e := range path[:len(path)-1] {
		if err := d.Editable(e.v, name); err != nil {
			return err
		}
	}
	at := len(path) - 1
	for at > 0 && len(path[at].parent.Content) <= 2 {
		at--
	}
	e := path[at]
	if err := d.DeleteEntry(e.parent, e.k, e.v, name); err != nil {
		return err
	}
	d.Record(name, path[len(path)-1].v.Value, "")
	return nil
}

type removeWholeGPUs struct{}

func (removeWholeGPUs) String() string { return "RemoveWholeGPUs()" }

func (o removeWholeGPUs) apply(d *podEdit) error {
	if d.dynamo {
		tmpl, err := d.template()
		if err != nil {
			return err
		}
		if err := d.removeGPUs(tmpl, d.serviceField("resources"), "gpu"); err != nil {
			return err
		}
		if splice.Lookup(tmpl, d.pod.Spec...) == nil {
			return nil
		}
	}
	var refs []containerRef
	for _, list := range []string{"containers", "initContainers"} {
		cs, err := d.containers(list)
		if err != nil {
			return err
		}
		for i, c := range cs {
			refs = append(refs, containerRef{list: list, i: i, c: c})
		}
	}
	if s, ok, err := d.servingContainer(); err != nil {
		return err
	} else if ok {
		refs = append([]containerRef{s}, refs...)
	}
	tmpl, err := d.template()
	if err != nil {
		return err
	}
	pod, err := d.podSpec()
	if err != nil {
		return err
	}
	holders := gpuHolders(pod, d.pod.Serving)
	if len(holders) > 1 {
		names := make([]string, len(holders))
		for i, h := range holders {
			names[i] = d.containerField(h)
		}
		return d.Fail(pod, d.specField(), fmt.Errorf("%w: %s", ErrSeveralGPUContainers, strings.Join(names, ", ")))
	}
	for _, r := range refs {
		if g := readGPU(r); g.via != nil {
			return d.Fail(g.via, d.containerField(r)+".resources", fmt.Errorf("%w: nvidia.com/gpu is written through it", splice.ErrAlias))
		}
		if err := d.removeGPUs(r.c, d.containerField(r)+".resources", kai.GPUResource); err != nil {
			return err
		}
	}
	if len(holders) == 0 {
		return nil
	}
	// KAI gives a fraction to the first container unless the pod names
	// another: name the one that held the GPU, unless it is the first.
	h := holders[0]
	named := splice.Str(splice.Lookup(tmpl, d.metaRel("annotations")...), kai.ContainerNameAnnotation)
	if first, _ := firstContainer(pod, d.pod.Serving); h.c == first.c && named == "" {
		return nil
	}
	field := d.metaField("annotations", kai.ContainerNameAnnotation)
	name := h.name()
	if name == "" {
		return d.Fail(h.c, field, fmt.Errorf("%w: %s requests nvidia.com/gpu but has no name to give the fraction to", splice.ErrUnsupported, d.containerField(h)))
	}
	return d.SetString(tmpl, field, d.metaRel("annotations", kai.ContainerNameAnnotation), name, splice.ScalarOpts{AsString: true})
}

// containerField names a container in a field path, e.g.
// spec.template.spec.containers[vllm], or spec.predictor.model for a
// serving container.
func (d *podEdit) containerField(r containerRef) string {
	return containerPath(d.pod, r)
}

// gpuTargets returns the containers the GPU goes to in the current parse
// (see gpuTargets), refusing when the container the pod names is missing.
func (d *podEdit) gpuTargets() ([]containerRef, error) {
	tmpl, err := d.template()
	if err != nil {
		return nil, err
	}
	ts, ok := gpuTargets(tmpl, d.pod)
	if !ok {
		name := splice.Str(splice.Lookup(tmpl, d.metaRel("annotations")...), kai.ContainerNameAnnotation)
		return nil, d.Fail(tmpl, d.metaField("annotations", kai.ContainerNameAnnotation), fmt.Errorf("%w: no container named %q", ErrNotFound, name))
	}
	return ts, nil
}

// removeGPUs deletes resource key (nvidia.com/gpu; a Dynamo service's
// gpu) from the limits and requests of c (a container; a Dynamo
// service), removing the mappings it leaves empty.
func (d *podEdit) removeGPUs(c *yaml.Node, base, key string) error {
	rk, res := splice.Field(c, "resources")
	if res == nil || res.Kind != yaml.MappingNode {
		return nil
	}
	type hit struct {
		lk, l, k, v *yaml.Node
		list        string
	}
	var hits []hit
	emptied := 0
	for _, list := range []string{"limits", "requests"} {
		lk, l := splice.Field(res, list)
		k, v := splice.Field(l, key)
		if k == nil {
			continue
		}
		hits = append(hits, hit{lk: lk, l: l, k: k, v: v, list: list})
		if len(l.Content) == 2 {
			emptied++
		}
	}
	if len(hits) == 0 {
		return nil
	}
	if err := d.Editable(res, base); err != nil {
		return err
	}
	if emptied*2 == len(res.Content) {
		if len(c.Content) == 2 {
			// A Dynamo service that only says its GPUs (often a
			// Kustomize patch): deleting its last entry would leave no
			// mapping, which the byte splice does not write.
			return d.Fail(c, base, fmt.Errorf("%w: it is the only field of its mapping, and removing it would leave an empty mapping, which is not written; edit it by hand", splice.ErrUnsupported))
		}
		if err := d.DeleteEntry(c, rk, res, base); err != nil {
			return err
		}
	} else {
		for _, h := range hits {
			name := base + "." + h.list + "." + key
			var err error
			if len(h.l.Content) == 2 {
				err = d.DeleteEntry(res, h.lk, h.l, name)
			} else {
				err = d.DeleteEntry(h.l, h.k, h.v, name)
			}
			if err != nil {
				return err
			}
		}
	}
	for _, h := range hits {
		d.Record(base+"."+h.list+"."+key, h.v.Value, "")
	}
	return nil
}

type setWholeGPUs struct{ n int64 }

func (o setWholeGPUs) String() string { return fmt.Sprintf("SetWholeGPUs(%d)", o.n) }

func (o setWholeGPUs) apply(d *podEdit) error {
	if d.dynamo {
		return d.setDynamoGPUs(o.n)
	}
	pod, err := d.podSpec()
	if err != nil {
		return err
	}
	if o.n < 1 {
		return d.Fail(pod, d.specField("containers"), fmt.Errorf("%w: %d whole GPUs", ErrInvalidValue, o.n))
	}
	ts, err := d.gpuTargets()
	if err != nil {
		return err
	}
	switch {
	case len(ts) == 0:
		return d.Fail(pod, d.specField("containers"), fmt.Errorf("%w: no GPU container", ErrNotFound))
	case len(ts) > 1:
		names := make([]string, len(ts))
		for i, t := range ts {
			names[i] = d.containerField(t)
		}
		return d.Fail(pod, d.specField(), fmt.Errorf("%w: %s", ErrSeveralGPUContainers, strings.Join(names, ", ")))
	}
	if err := d.editable(ts[0]); err != nil {
		return err
	}
	c := ts[0].c
	base := d.containerField(ts[0]) + ".resources."
	v := strconv.FormatInt(o.n, 10)
	if err := d.SetString(c, base+"limits."+kai.GPUResource, []string{"resources", "limits", kai.GPUResource}, v, splice.ScalarOpts{Quote: true}); err != nil {
		return err
	}
	if splice.Str(splice.Lookup(c, "resources", "requests"), kai.GPUResource) != "" {
		return d.SetString(c, base+"requests."+kai.GPUResource, []string{"resources", "requests", kai.GPUResource}, v, splice.ScalarOpts{Quote: true})
	}
	return nil
}

type setVLLMUtil struct{ value string }

func (o setVLLMUtil) String() string { return fmt.Sprintf("SetVLLMMemoryUtilization(%q)", o.value) }

var utilValueRE = regexp.MustCompile(`^(0?\.[0-9]+|1(\.0*)?)$`)

func (o setVLLMUtil) apply(d *podEdit) error {
	refs, err := d.podContainers()
	if err != nil {
		return err
	}
	if f, perr := strconv.ParseFloat(o.value, 64); perr != nil || !utilValueRE.MatchString(o.value) || f <= 0 || f > 1 {
		pod, err := d.podSpec()
		if err != nil {
			return err
		}
		return d.Fail(pod, d.specField("containers"), fmt.Errorf("%w: --gpu-memory-utilization %q must be a decimal in (0, 1]", ErrInvalidValue, o.value))
	}
	ts, err := d.gpuTargets()
	if err != nil {
		return err
	}
	gpu := map[*yaml.Node]bool{}
	for _, t := range ts {
		gpu[t.c] = true
	}
	for _, r := range refs {
		c := r.c
		v := scanContainer(r)
		if !v.isVLLM() {
			continue
		}
		base := d.containerField(r)
		if !gpu[c] {
			// vLLM sizes itself by the memory of the GPU it sees; this
			// container gets none of the pod's GPU, or not this one.
			d.note(c, base, ErrNotGPUContainer)
			continue
		}
		if v.kvBytes {
			d.note(c, base, ErrKVCacheBytes)
			continue
		}
		if v.err != nil {
			return d.Fail(c, base, v.err)
		}
		if len(v.sites) > 0 {
			if err := d.setUtil(v, base, o.value); err != nil {
				return err
			}
			continue
		}
		if r.serving && v.args == nil && v.command == nil {
			// Its args go after its runtime's, whose command line is
			// not in this file: there is no list to add the flag to.
			return d.Fail(c, base, fmt.Errorf("%w: %s has no args, where the flag would go after its runtime's (add args: [--gpu-memory-utilization=%s] by hand)",
				ErrNoVLLMCommand, base, o.value))
		}
		if err := d.addUtil(c, v, base, o.value); err != nil {
			if d.group && errors.Is(err, ErrNoVLLMCommand) {
				// In a group (a LeaderWorkerSet's leader and workers),
				// the vLLM server runs in one template and the others
				// join it (ray workers): the flag goes where it runs.
				d.note(c, base, fmt.Errorf("%w: in a group, the flag is set where vLLM serves", ErrNoVLLMCommand))
				continue
			}
			return err
		}
	}
	return nil
}

// podContainers returns the containers of the pod as it will have them
// (the serving container first), after checking the paths to them can be
// edited.
func (d *podEdit) podContainers() ([]containerRef, error) {
	cs, err := d.containers("containers")
	if err != nil {
		return nil, err
	}
	var refs []containerRef
	if s, ok, err := d.servingContainer(); err != nil {
		return nil, err
	} else if ok {
		refs = append(refs, s)
	}
	for i, c := range cs {
		refs = append(refs, containerRef{list: "containers", i: i, c: c})
	}
	return refs, nil
}

// listName says whether item n belongs to the command or the args list.
func (v *vllmScan) listName(n *yaml.Node) string {
	if v.command != nil && splice.IndexOf(v.command.Content, n) >= 0 {
		return "command"
	}
	return "args"
}

// setUtil rewrites every existing --gpu-memory-utilization value.
func (d *podEdit) setUtil(v *vllmScan, base, value string) error {
	done := map[*yaml.Node]bool{}
	for _, s := range v.sites {
		if done[s.n] {
			continue
		}
		done[s.n] = true
		name := base + "." + v.listName(s.n)
		if s.whole {
			cur := strings.TrimSpace(s.n.Value)
			if !numberRE.MatchString(cur) || numberRE.FindString(cur) != cur {
				if strings.Contains(cur, "{{") {
					return d.Fail(s.n, name, fmt.Errorf("%w: --gpu-memory-utilization %s", splice.ErrTemplate, cur))
				}
				return d.Fail(s.n, name, fmt.Errorf("%w: --gpu-memory-utilization value %q is not a literal number", splice.ErrUnsupported, cur))
			}
			changed, err := d.ReplaceScalar(s.n, value, name, splice.ScalarOpts{AsString: true})
			if err != nil {
				return err
			}
			if changed {
				d.Record(name, cur, value)
			}
			continue
		}
		subs, err := d.EditInScalar(s.n, name, func(text string) ([]splice.Subst, error) {
			hits, err := utilHits(text)
			var out []splice.Subst
			for _, h := range hits {
				if h.value != value {
					out = append(out, splice.Subst{Start: h.start, End: h.end, Key: h.value, Repl: value})
				}
			}
			return out, err
		})
		if err != nil {
			return err
		}
		for _, sub := range subs {
			d.Record(name, sub.Key, value)
		}
	}
	return nil
}

// addUtil adds the flag to a vLLM container that has none: inside the
// shell string that runs vllm, or as a new argument.
func (d *podEdit) addUtil(c *yaml.Node, v *vllmScan, base, value string) error {
	flag := "--gpu-memory-utilization=" + value
	switch {
	case len(v.scripts) > 0:
		for _, s := range v.scripts {
			name := base + "." + v.listName(s)
			subs, err := d.EditInScalar(s, name, func(text string) ([]splice.Subst, error) {
				var out []splice.Subst
				for _, m := range serveRE.FindAllStringIndex(text, -1) {
					key := strings.TrimLeft(text[m[0]:m[1]], " \t\r\n/;&|(\"'")
					out = append(out, splice.Subst{Start: m[1], End: m[1], Key: key, Repl: " " + flag})
				}
				return out, nil
			})
			if err != nil {
				return err
			}
			if len(subs) > 0 {
				d.Record(name, "", value)
			}
		}
		return nil
	case v.shell:
		return d.Fail(c, base, fmt.Errorf("%w: the shell command does not run vllm serve or vllm.entrypoints", ErrNoVLLMCommand))
	case v.invoked || v.command == nil:
		target, name := v.args, "args"
		if _, a := splice.Field(c, "args"); a != nil && v.args == nil {
			return d.Fail(a, base+".args", fmt.Errorf("%w: args is not a list", splice.ErrUnsupported))
		}
		if target == nil && v.tokens {
			target, name = v.command, "command"
		}
		if target == nil {
			return d.Fail(c, base, fmt.Errorf("%w: the container runs the image's default command", ErrNoVLLMCommand))
		}
		if err := d.AppendItem(target, flag, base+"."+name); err != nil {
			return err
		}
		d.Record(base+"."+name, "", value)
		return nil
	}
	return d.Fail(c, base, fmt.Errorf("%w: the command does not run vllm", ErrNoVLLMCommand))
}

// validFraction accepts what the tool writes for gpu-fraction: what KAI
// accepts and keeps exactly, in its plainest form, a decimal strictly
// between 0 and 1 with at most two places, 0.01 to 0.99 (KAI's webhook
// also takes 5e-1 or +0.5, which the tool reads but never writes).
func validFraction(v string) error {
	f, err := kai.ParseFraction(v)
	whole, places, _ := strings.Cut(v, ".")
	plain := strings.Trim(whole, "0123456789") == "" && strings.Trim(places, "0123456789") == ""
	if err != nil || !plain || len(places) > 2 || !kai.OnGrid(f) {
		return fmt.Errorf("%w: %s %q must be a decimal from %s to %s with at most two places",
			ErrInvalidValue, kai.FractionAnnotation, v, kai.FormatFraction(kai.MinFraction), kai.FormatFraction(kai.MaxFraction))
	}
	return nil
}

// kaiConflict says why KAI would refuse the GPU request of pod p of
// object root: gpu-fraction next to gpu-memory, or either of them next to
// an nvidia.com/gpu limit or request in a container or init container.
// Where the kind's pods get the object's own annotations too, those count
// beneath the pod's. It returns the node to blame, its field and the
// reason; a nil error when there is none.
func kaiConflict(root *yaml.Node, spec Spec, p Pod) (*yaml.Node, string, error) {
	find := func(name string) (*yaml.Node, string) {
		if k, _ := splice.Field(splice.Lookup(root, p.meta("annotations")...), name); k != nil {
			return k, dotted(p.meta("annotations", name))
		}
		if spec.objectAnnotations {
			if k, _ := splice.Field(splice.Lookup(root, "metadata", "annotations"), name); k != nil {
				return k, "metadata.annotations." + name
			}
		}
		return nil, ""
	}
	fk, ff := find(kai.FractionAnnotation)
	mk, _ := find(kai.MemoryAnnotation)
	if err := (kai.Request{Fraction: fk != nil, Memory: mk != nil}).Conflict(); err != nil {
		return fk, ff, fmt.Errorf("%w: %w", ErrInvalidValue, err)
	}
	share, name := fk, kai.FractionAnnotation
	if share == nil {
		share, name = mk, kai.MemoryAnnotation
	}
	if share == nil {
		return nil, "", nil
	}
	if spec.dynamo {
		for _, list := range []string{"limits", "requests"} {
			if k, _ := splice.Field(splice.Lookup(root, join(p.Path, "resources", list)...), "gpu"); k != nil {
				return k, dotted(join(p.Path, "resources", list, "gpu")),
					fmt.Errorf("%w: next to the pod's %s, which KAI refuses (RemoveWholeGPUs removes it)", ErrInvalidValue, name)
			}
		}
	}
	for _, r := range allContainers(splice.Lookup(root, p.spec()...), p.Serving) {
		if g := readGPU(r); g.present {
			return g.at, fmt.Sprintf("%s.resources.%s.%s", containerPath(p, r), g.list, kai.GPUResource),
				fmt.Errorf("%w: next to the pod's %s, which KAI refuses (RemoveWholeGPUs removes it)", ErrInvalidValue, name)
		}
	}
	return nil, "", nil
}
