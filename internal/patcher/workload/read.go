package workload

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Spec says how to read one workload kind: which API groups it lives
// in and where its pods' fields are.
type Spec struct {
	groups []string
	// Template is where the fields of the workload's pods, and its GPU
	// request, are read from.
	Template Pod
	// Group, when its Path is set, is a second pod template whose pods
	// run in groups with the first's and are sized with them (a
	// LeaderWorkerSet's leaderTemplate). Where it is present and asks for
	// GPUs, every Op applies to it too, and it must ask for the same GPUs
	// as Template.
	Group Pod
	// objectAnnotations: the kind's controller gives the object's own
	// metadata.annotations to its pods too, beneath Template's (KServe
	// does, to the pods of every component). KAI's annotations there are
	// read as a request that is not edited.
	objectAnnotations bool
	// others are the paths of other pods the object runs together with
	// Template's, which are not sized: where one asks for GPUs, sizing
	// Template's alone would be wrong, and the workload is left alone.
	others [][]string
	// dynamo: a service of a DynamoGraphDeployment (see DynamoKind), whose
	// whole GPUs are the service's resources.gpu count, not a container's.
	dynamo bool
}

// SpecFor returns how to read kind, ok false for a kind that is not
// sized. The kinds and their templates follow their APIs: apps/v1
// (Deployment, StatefulSet), Argo Rollouts' argoproj.io/v1alpha1 Rollout
// (spec.template, as a Deployment's), leaderworkerset.x-k8s.io/v1
// LeaderWorkerSet (spec.leaderWorkerTemplate.workerTemplate, and
// leaderTemplate for the group's first pod when it differs) and KServe's
// serving.kserve.io/v1beta1 InferenceService (v0.20.0: its predictor,
// whose pods KServe builds from spec.predictor: the pod spec inlined, the
// pods' labels and annotations as its fields, and model, or a framework
// field, as the serving container); testdata/kinds holds the
// InferenceService CRD. NVIDIA Dynamo's nvidia.com DynamoGraphDeployment
// is one workload per service (IdentifyAll, DynamoKind).
func SpecFor(kind string) (Spec, bool) {
	podTemplate := templatePod("spec", "template")
	switch kind {
	case "Deployment":
		return Spec{groups: []string{"apps", "extensions"}, Template: podTemplate}, true
	case "StatefulSet":
		return Spec{groups: []string{"apps"}, Template: podTemplate}, true
	case "Rollout":
		return Spec{groups: []string{"argoproj.io"}, Template: podTemplate}, true
	case "LeaderWorkerSet":
		return Spec{groups: []string{"leaderworkerset.x-k8s.io"},
			Template: templatePod("spec", "leaderWorkerTemplate", "workerTemplate"),
			Group:    templatePod("spec", "leaderWorkerTemplate", "leaderTemplate")}, true
	case "InferenceService":
		return Spec{groups: []string{"serving.kserve.io"},
			Template: Pod{Path: []string{"spec", "predictor"},
				Serving: []string{"model", "sklearn", "xgboost", "tensorflow", "pytorch", "triton", "onnx", "huggingface", "pmml", "lightgbm", "paddle"}},
			objectAnnotations: true,
			// A multi-node predictor's workers, and the canaries' own
			// predictors, run pods of their own.
			others: [][]string{{"spec", "predictor", "workerSpec"}, {"spec", "canary"}}}, true
	case DynamoKind:
		// One Spec per service: IdentifyAll gives each its own.
		return Spec{groups: []string{"nvidia.com"}, dynamo: true}, true
	}
	return Spec{}, false
}

// Kinds are the kinds SpecFor sizes, for documentation and tests.
func Kinds() []string {
	return []string{"Deployment", "StatefulSet", "Rollout", "LeaderWorkerSet", "InferenceService", DynamoKind}
}

// Edited returns where the pods an Edit changes are: Template, and Group
// where root has it and it asks for GPUs.
func (k Spec) Edited(root *yaml.Node) []Pod {
	out := []Pod{k.Template}
	if len(k.Group.Path) > 0 && requestsGPU(Read(root, usage.Ref{}, Spec{groups: k.groups, Template: k.Group}).GPU) {
		out = append(out, k.Group)
	}
	return out
}

// requestsGPU reports whether a pod template asks for GPUs in any way KAI
// reads, or its request cannot be read (which is not "no request").
func requestsGPU(g GPU) bool {
	return g.Whole > 0 || g.FractionText != "" || g.MemoryMiB > 0 || g.FractionErr != nil || g.Err != nil
}

// Asked reports whether a workload asks for GPUs in any way KAI reads, or
// its request cannot be read: a workload that does not is one no plan
// edits but to give it a GPU.
func (g GPU) Asked() bool { return requestsGPU(g) }

func (k Spec) accepts(apiVersion string) bool {
	g, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return false
	}
	for _, want := range k.groups {
		if g == want {
			return true
		}
	}
	return false
}

// Identify returns the workload identity of a document root, ok=false when
// it is not a workload kind we read.
func Identify(root *yaml.Node) (usage.Ref, Spec, bool) {
	if root == nil || root.Kind != yaml.MappingNode {
		return usage.Ref{}, Spec{}, false
	}
	kind := splice.Str(root, "kind")
	spec, ok := SpecFor(kind)
	if !ok || spec.dynamo || !spec.accepts(splice.Str(root, "apiVersion")) {
		// A DynamoGraphDeployment is several workloads: IdentifyAll.
		return usage.Ref{}, Spec{}, false
	}
	if splice.Lookup(root, spec.Template.Path...) == nil && splice.Lookup(root, "spec", "workloadRef") != nil {
		// A Rollout that runs the pod template of another object:
		// reported as unsupported, then made a workload by FollowRefs
		// when that object is a Deployment of the repository.
		return usage.Ref{}, Spec{}, false
	}
	md := splice.Lookup(root, "metadata")
	return usage.Ref{Kind: kind, Namespace: splice.Str(md, "namespace"), Name: splice.Str(md, "name")}, spec, true
}

// ValidRef refuses a workload whose name or namespace Kubernetes would
// not accept. Besides sparing a plan for an object that cannot exist, it
// keeps input out of the terminal: a name is printed in plan rows and
// pull requests, and one holding a line break or an escape sequence would
// forge a row or colour the terminal. The error quotes the name with %q,
// so nothing raw is printed.
func ValidRef(ref usage.Ref) error {
	if why := dns1123Subdomain(ref.Name); why != "" {
		return fmt.Errorf("metadata.name %q is %w: %s", ref.Name, ErrInvalidName, why)
	}
	if ref.Namespace == "" {
		return nil // absent: the caller's default applies
	}
	if why := dns1123Label(ref.Namespace); why != "" {
		return fmt.Errorf("metadata.namespace %q is %w: %s", ref.Namespace, ErrInvalidName, why)
	}
	return nil
}

// dns1123Label says why s is not a DNS-1123 label, the rule for
// namespaces; "" when it is one.
func dns1123Label(s string) string {
	switch {
	case len(s) > 63:
		return fmt.Sprintf("it has %d characters, a namespace at most 63", len(s))
	case !dns1123LabelRE.MatchString(s):
		return "a namespace has lowercase letters, digits and '-', and starts and ends with a letter or digit"
	}
	return ""
}

// dns1123Subdomain says why s is not a DNS-1123 subdomain, the rule for
// Deployment names; "" when it is one.
func dns1123Subdomain(s string) string {
	switch {
	case len(s) > 253:
		return fmt.Sprintf("it has %d characters, a name at most 253", len(s))
	case !dns1123SubdomainRE.MatchString(s):
		return "a name has lowercase letters, digits, '-' and '.', and starts and ends with a letter or digit"
	}
	return ""
}

var (
	dns1123LabelRE     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123SubdomainRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// BuiltWorkload is a workload in the output of a build or a render, with
// the index of its document in that stream, the object that defines it
// (itself, or the DynamoGraphDeployment of its service) and how it is
// read.
type BuiltWorkload struct {
	Workload Workload
	Root     *yaml.Node
	Doc      int
	Object   usage.Ref
	Service  string
	Spec     Spec
}

// BuiltWorkloads reads the workloads of a built or rendered stream: what
// Kustomize builds and what a chart renders are read alike.
func BuiltWorkloads(out []byte) ([]BuiltWorkload, error) {
	s, err := splice.Parse(out)
	if err != nil {
		return nil, err
	}
	roots := make([]*yaml.Node, len(s.Docs))
	for i, doc := range s.Docs {
		if len(doc.Content) > 0 {
			roots[i] = doc.Content[0]
		}
	}
	return BuiltWorkloadsOf(roots), nil
}

// BuiltWorkloadsOf is BuiltWorkloads of objects already parsed, one root
// a document (nil for an empty one): Kustomize's build as it holds it,
// read without rendering it.
func BuiltWorkloadsOf(roots []*yaml.Node) []BuiltWorkload {
	var bw []BuiltWorkload
	for i, root := range roots {
		if root == nil {
			continue
		}
		for _, id := range IdentifyAll(root) {
			if ValidRef(id.Ref) != nil {
				continue
			}
			bw = append(bw, BuiltWorkload{Workload: Read(root, id.Ref, id.Spec), Root: root, Doc: i,
				Object: id.Object, Service: id.Service, Spec: id.Spec})
		}
	}
	return bw
}

// Read builds a Workload from a document root that identify
// accepted.
func Read(root *yaml.Node, ref usage.Ref, spec Spec) Workload {
	p := spec.Template
	w := Workload{Ref: ref}
	w.Labels = splice.StringMap(splice.Lookup(root, "metadata", "labels"))
	w.PodLabels = splice.StringMap(splice.Lookup(root, p.meta("labels")...))
	w.PodAnnotations = splice.StringMap(splice.Lookup(root, p.meta("annotations")...))
	pod := splice.Lookup(root, p.spec()...)
	w.SchedulerName = splice.Str(pod, "schedulerName")
	w.Queue = w.Labels[kai.QueueLabel]
	if w.Queue == "" {
		w.Queue = w.PodLabels[kai.QueueLabel]
	}
	w.GPU = readAnnotations(root, spec)
	if ref.Kind == "InferenceService" {
		w.Component = splice.Str(splice.Lookup(root, "spec", "predictor"), "name")
	}

	var sum, initMax int64
	for _, r := range allContainers(pod, p.Serving) {
		g := readGPU(r)
		n := g.n
		if g.via != nil && w.GPU.Err == nil {
			w.GPU.Err = fmt.Errorf("%w: line %d: the nvidia.com/gpu of %s is written through it, so it is read but not edited",
				splice.ErrAlias, g.via.Line, containerPath(p, r))
		}
		if r.list == "initContainers" {
			initMax = max(initMax, n)
		} else {
			sum += n
		}
		if n > 0 {
			w.GPU.WholeContainers = append(w.GPU.WholeContainers, r.label())
		}
	}
	// Kubernetes sums what the containers request and takes the larger of
	// that and the largest init container, which runs alone.
	w.GPU.Whole = max(sum, initMax)
	if spec.dynamo {
		readDynamoGPUs(root, p, &w.GPU)
	}
	if ts, ok := gpuTargets(splice.Lookup(root, p.Path...), p); ok && len(ts) == 1 {
		w.GPU.Container = ts[0].label()
	}
	w.Containers = readContainers(pod, p)
	if w.GPU.Err == nil {
		w.GPU.Err = othersAskForGPUs(root, spec, w.GPU)
	}
	return w
}

// readAnnotations reads the pods' GPU request as KAI reads their
// annotations.
func readAnnotations(root *yaml.Node, spec Spec) GPU {
	g := GPU{NumDevices: 1}
	// Each annotation is read from its node, not from PodAnnotations:
	// that map drops what is not a scalar, and a value KAI would refuse
	// must be reported, never read as "no GPU request".
	keep := func(err error) {
		if g.FractionErr == nil {
			g.FractionErr = err
		}
	}
	if v, err := annotation(root, spec.Template, kai.FractionAnnotation); err != nil {
		keep(err)
	} else if v != nil {
		g.FractionText = v.Value
		// kai.ParseFraction, not ParseFloat: KAI takes no blanks, signs,
		// exponents or hex floats.
		if f, err := kai.ParseFraction(v.Value); err != nil {
			keep(fmt.Errorf("line %d: %w", v.Line, err))
		} else {
			g.Fraction = f
		}
	}
	if v, err := annotation(root, spec.Template, kai.MemoryAnnotation); err != nil {
		keep(err)
	} else if v != nil {
		if m, ok := count(v.Value); ok {
			g.MemoryMiB = m
		} else {
			keep(fmt.Errorf("%w: line %d: %s %q is not a whole number of MiB above 0", ErrInvalidValue, v.Line, kai.MemoryAnnotation, v.Value))
		}
	}
	if v, err := annotation(root, spec.Template, kai.NumDevicesAnnotation); err != nil {
		keep(err)
	} else if v != nil {
		if n, ok := count(v.Value); ok && n <= math.MaxInt32 {
			g.NumDevices = int(n)
		} else {
			keep(fmt.Errorf("%w: line %d: %s %q is not a whole number above 0", ErrInvalidValue, v.Line, kai.NumDevicesAnnotation, v.Value))
		}
	}
	if k := objectKAIAnnotation(root, spec); k != nil {
		keep(fmt.Errorf("%w: line %d: %s is in metadata.annotations, which KServe gives the pods of every component; it is read but not edited (the predictor's are in %s)",
			ErrObjectAnnotation, k.Line, k.Value, dotted(spec.Template.meta("annotations"))))
	}
	return g
}

// objectKAIAnnotation returns the key of the first of KAI's annotations
// that the object itself carries, for a kind whose controller gives those
// to its pods; nil when there is none.
func objectKAIAnnotation(root *yaml.Node, spec Spec) *yaml.Node {
	if !spec.objectAnnotations {
		return nil
	}
	ann := splice.Lookup(root, "metadata", "annotations")
	for _, name := range []string{kai.FractionAnnotation, kai.MemoryAnnotation, kai.NumDevicesAnnotation, kai.ContainerNameAnnotation} {
		if k, _ := splice.Field(ann, name); k != nil {
			return k
		}
	}
	return nil
}

// readContainers reads the containers of pod spec pod as the pod will
// have them: the serving container first, then containers (not init
// containers).
func readContainers(pod *yaml.Node, p Pod) []Container {
	refs := containerRefs(pod, "containers")
	if s, ok := serving(pod, p.Serving); ok {
		refs = append([]containerRef{s}, refs...)
	}
	var out []Container
	for _, r := range refs {
		v := scanContainer(r)
		out = append(out, Container{
			Name:                 r.label(),
			Image:                splice.Str(r.c, "image"),
			VLLM:                 v.isVLLM(),
			GPUMemoryUtilization: v.current(),
			KVCacheMemoryBytes:   v.kvBytes,
		})
	}
	return out
}

// othersAskForGPUs says why a workload whose pods are read from more than
// one place is left alone: a group whose templates ask for different
// GPUs, or other pods it runs (not sized) that ask for GPUs.
func othersAskForGPUs(root *yaml.Node, spec Spec, g GPU) error {
	if len(spec.Group.Path) > 0 && splice.Lookup(root, spec.Group.Path...) != nil {
		if other := Read(root, usage.Ref{}, Spec{groups: spec.groups, Template: spec.Group}).GPU; requestsGPU(other) && !sameRequest(g, other) {
			return fmt.Errorf("%w: %s asks for other GPUs than %s (%s against %s); the pods of a group are sized together, so it is left alone",
				ErrGroupMismatch, dotted(spec.Group.Path), dotted(spec.Template.Path), describe(other), describe(g))
		}
	}
	for _, o := range spec.others {
		if n := splice.Lookup(root, o...); asksForGPU(n) {
			return fmt.Errorf("%w: line %d: %s asks for GPUs too, and its pods are not sized with %s's, so it is left alone",
				ErrUnsizedPods, n.Line, dotted(o), dotted(spec.Template.Path))
		}
	}
	return nil
}

// sameRequest reports whether two pod templates ask for the same GPUs.
func sameRequest(a, b GPU) bool {
	return a.FractionText == b.FractionText && a.MemoryMiB == b.MemoryMiB && a.Whole == b.Whole && a.NumDevices == b.NumDevices &&
		a.FractionErr == nil && b.FractionErr == nil && b.Err == nil
}

// describe says what a pod template asks for, for a message.
func describe(g GPU) string {
	switch {
	case g.FractionErr != nil || g.Err != nil:
		return "a request that cannot be read"
	case g.FractionText != "":
		return kai.FractionAnnotation + " " + g.FractionText
	case g.MemoryMiB > 0:
		return fmt.Sprintf("%s %d", kai.MemoryAnnotation, g.MemoryMiB)
	case g.Whole > 0:
		return fmt.Sprintf("nvidia.com/gpu %d", g.Whole)
	}
	return "no GPU"
}

// annotation returns the scalar node of pod annotation name of a
// workload's document root, nil when the annotation is absent. The error
// says why the value cannot be read as KAI reads it or edited in place:
// written through an alias or a merge key, null, a sequence or a
// mapping; it names the line.
func annotation(root *yaml.Node, p Pod, name string) (*yaml.Node, error) {
	// via is the first alias or merge key on the way; it matters only
	// when the annotation is there at the end of it.
	var via error
	n := root
	for _, key := range p.meta("annotations", name) {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil, nil
		}
		_, v := splice.Field(n, key)
		switch {
		case v == nil:
			if v = readField(n, key); v != nil && via == nil {
				via = fmt.Errorf("%w: line %d: %s is written through a << merge key", splice.ErrAlias, mergeLine(n), name)
			}
		case v.Kind == yaml.AliasNode:
			if via == nil {
				via = fmt.Errorf("%w: line %d: %s is written through an alias", splice.ErrAlias, v.Line, name)
			}
			v = resolved(v)
		}
		if v == nil {
			return nil, nil
		}
		n = v
	}
	if via != nil {
		return nil, via
	}
	switch {
	case n.Kind == yaml.SequenceNode:
		return nil, fmt.Errorf("%w: line %d: %s is a sequence, not a string", ErrInvalidValue, n.Line, name)
	case n.Kind == yaml.MappingNode:
		return nil, fmt.Errorf("%w: line %d: %s is a mapping, not a string", ErrInvalidValue, n.Line, name)
	case n.Kind != yaml.ScalarNode:
		return nil, fmt.Errorf("%w: line %d: %s is not a string", ErrInvalidValue, n.Line, name)
	case n.ShortTag() == "!!null":
		return nil, fmt.Errorf("%w: line %d: %s is null, not a string", ErrInvalidValue, n.Line, name)
	}
	return n, nil
}

// mergeLine is the line of the first merge key (<<) of mapping m.
func mergeLine(m *yaml.Node) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style == 0 {
			return k.Line
		}
	}
	return m.Line
}

// count reads a whole number above 0 the way KAI reads gpu-memory and
// gpu-fraction-num-devices: ASCII digits only, no blanks or signs.
func count(s string) (int64, bool) {
	if s == "" {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n > 0
}

// containerRef is one container or init container of a pod spec.
type containerRef struct {
	list string // "containers", "initContainers", or the serving container's key
	i    int    // index in list
	c    *yaml.Node
	item *yaml.Node // the sequence item (or the serving container's value): c, or an alias of it
	// serving: the serving container of a KServe component (Pod.Serving).
	serving bool
}

// name is the container's name in the pod, "" when it has none.
func (r containerRef) name() string {
	if n := splice.Str(r.c, "name"); n != "" || !r.serving {
		return n
	}
	if r.list == dynamoMain {
		return dynamoMainName
	}
	return servingContainerName
}

// label names a container in a field path: its name, else its index.
func (r containerRef) label() string {
	if n := r.name(); n != "" {
		return n
	}
	return fmt.Sprint(r.i)
}

func containerRefs(pod *yaml.Node, list string) []containerRef {
	_, s := splice.Field(pod, list)
	if s == nil || s.Kind != yaml.SequenceNode {
		return nil
	}
	var out []containerRef
	for _, it := range s.Content {
		if c := resolved(it); c != nil && c.Kind == yaml.MappingNode {
			out = append(out, containerRef{list: list, i: len(out), c: c, item: it})
		}
	}
	return out
}

// allContainers returns the containers of pod spec pod as the pod has
// them: the serving container (of keys) first, then containers, then the
// init containers.
func allContainers(pod *yaml.Node, keys []string) []containerRef {
	var out []containerRef
	if s, ok := serving(pod, keys); ok {
		out = append(out, s)
	}
	return append(append(out, containerRefs(pod, "containers")...), containerRefs(pod, "initContainers")...)
}

// firstContainer returns the pod's first container, where KAI puts a
// fraction unless the pod names another; ok false when it has none.
func firstContainer(pod *yaml.Node, keys []string) (containerRef, bool) {
	if s, ok := serving(pod, keys); ok {
		return s, true
	}
	if cs := containerRefs(pod, "containers"); len(cs) > 0 {
		return cs[0], true
	}
	return containerRef{}, false
}

// containerPath is the path of container r of p, for a message.
func containerPath(p Pod, r containerRef) string {
	if r.serving {
		return dotted(p.spec(r.list))
	}
	return dotted(p.spec(r.list)) + "[" + r.label() + "]"
}

// resolved follows aliases to the node they name.
func resolved(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

// indirect reports whether n is written through YAML's sharing: an
// alias, an anchor (other places may alias it) or a merge key.
func indirect(n *yaml.Node) bool {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		return true
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.Value == "<<" && k.Style == 0 {
				return true
			}
		}
	}
	return false
}

// readField returns the value of key name in mapping m as a YAML reader
// sees it: through aliases, and from a merged mapping (<<) when m has no
// such key of its own.
func readField(m *yaml.Node, name string) *yaml.Node {
	m = resolved(m)
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	if _, v := splice.Field(m, name); v != nil {
		return resolved(v)
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind != yaml.ScalarNode || k.Value != "<<" || k.Style != 0 {
			continue
		}
		srcs := []*yaml.Node{resolved(m.Content[i+1])}
		if srcs[0] != nil && srcs[0].Kind == yaml.SequenceNode {
			srcs = srcs[0].Content
		}
		for _, src := range srcs {
			if v := readField(src, name); v != nil {
				return v
			}
		}
	}
	return nil
}

// gpuRequest is what a container asks of nvidia.com/gpu.
type gpuRequest struct {
	// n is the larger of the limit and the request; a value that is not a
	// plain count (a template, ...) counts as 1.
	n int64
	// present: a limit or request is written, even as 0.
	present bool
	// via is the alias, anchor or merge key it is written through, nil
	// when none: an edit there would change other places too.
	via *yaml.Node
	// at is the first value found, in list (limits or requests).
	at   *yaml.Node
	list string
}

// readGPU reads a container's nvidia.com/gpu, through aliases and merge
// keys as Kubernetes would.
func readGPU(r containerRef) gpuRequest {
	var g gpuRequest
	mark := func(n *yaml.Node) {
		if g.via == nil && n != nil && indirect(n) {
			g.via = n
		}
	}
	mark(r.item)
	_, res := splice.Field(r.c, "resources")
	if res == nil {
		return g
	}
	mark(res)
	mark(resolved(res))
	for _, list := range []string{"limits", "requests"} {
		l := readField(res, list)
		if l == nil {
			continue
		}
		if _, own := splice.Field(resolved(res), list); own != nil {
			mark(own)
		}
		mark(l)
		v := readField(l, kai.GPUResource)
		if v == nil || v.Kind != yaml.ScalarNode {
			continue
		}
		if !g.present {
			g.at, g.list = v, list
		}
		g.present = true
		q, err := strconv.ParseInt(strings.TrimSpace(v.Value), 10, 64)
		if err != nil {
			q = 1
		}
		g.n = max(g.n, q)
	}
	if !g.present {
		g.via = nil
	}
	return g
}

// gpuHolders returns the containers and init containers that request
// nvidia.com/gpu (a count that is not zero).
func gpuHolders(pod *yaml.Node, keys []string) []containerRef {
	var out []containerRef
	for _, r := range allContainers(pod, keys) {
		if readGPU(r).n > 0 {
			out = append(out, r)
		}
	}
	return out
}

// gpuTargets returns the containers the pod's GPU goes to, as KAI reads
// the pod p whose fields are in base (the mapping at p.Path): the one
// named by gpu-fraction-container-name (containers first, then init
// containers); else those that request nvidia.com/gpu; else the first
// container, which is where KAI puts a fraction or gpu-memory. ok is
// false when the named container does not exist.
//
// A pod with both a fraction and nvidia.com/gpu is one that an Edit is
// moving to a fraction (KAI refuses both): RemoveWholeGPUs will name the
// container that held the GPU, so the answer does not depend on the order
// of the ops.
func gpuTargets(base *yaml.Node, p Pod) (ts []containerRef, ok bool) {
	pod := splice.Lookup(base, p.Spec...)
	if name := splice.Str(splice.Lookup(base, join(p.Meta, "annotations")...), kai.ContainerNameAnnotation); name != "" {
		for _, r := range allContainers(pod, p.Serving) {
			if r.name() == name {
				return []containerRef{r}, true
			}
		}
		return nil, false
	}
	if hs := gpuHolders(pod, p.Serving); len(hs) > 0 {
		return hs, true
	}
	if first, ok := firstContainer(pod, p.Serving); ok {
		return []containerRef{first}, true
	}
	return nil, true
}
