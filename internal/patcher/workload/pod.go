package workload

import (
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
)

// Pod says where the fields of the pods a workload runs are written, as
// paths from the object. Most kinds hold a pod template, whose metadata
// and spec are two mappings of it; KServe's components inline a pod spec
// and the pods' labels and annotations in one mapping, next to a field
// that is one more container.
type Pod struct {
	// Path is the mapping the pod's fields are written in: a pod template
	// (spec.template), or a component (an InferenceService's
	// spec.predictor).
	Path []string
	// Meta is where, under Path, the pods' labels and annotations are:
	// metadata in a pod template, nothing where they are Path's own
	// fields.
	Meta []string
	// Spec is where, under Path, the pod spec is (containers,
	// schedulerName, …): spec in a pod template, nothing where it is
	// inlined.
	Spec []string
	// Serving are keys of the pod spec of which the first present is the
	// serving container: KServe merges it with its runtime's container
	// into the pod's first container, named kserve-container unless it
	// has a name of its own. The predictor's containers come after it.
	Serving []string
	// Resources is where, under Path, a resources mapping is that the
	// controller turns into the serving container's GPUs (a Dynamo
	// service's resources, whose gpu count goes to its main container);
	// nil for the kinds whose containers say it themselves.
	Resources []string
}

// templatePod is the pod of a pod template at path.
func templatePod(path ...string) Pod {
	return Pod{Path: path, Meta: []string{"metadata"}, Spec: []string{"spec"}}
}

// join is a, then b.
func join(a []string, b ...string) []string {
	return append(append(make([]string, 0, len(a)+len(b)), a...), b...)
}

// meta is the path, from the object, of the pods' metadata field rest
// (annotations, labels).
func (p Pod) meta(rest ...string) []string { return join(p.Path, join(p.Meta, rest...)...) }

// spec is the path, from the object, of pod spec field rest.
func (p Pod) spec(rest ...string) []string { return join(p.Path, join(p.Spec, rest...)...) }

// dotted writes a path as a field name.
func dotted(path []string) string { return strings.Join(path, ".") }

// servingContainerName is the name KServe gives the container it builds
// from a predictor's model (constants.InferenceServiceContainerName).
const servingContainerName = "kserve-container"

// serving returns the serving container of pod spec pod, ok false when
// the kind has none or the spec does not set it.
func serving(pod *yaml.Node, keys []string) (containerRef, bool) {
	for _, key := range keys {
		_, it := splice.Field(pod, key)
		if c := resolved(it); c != nil && c.Kind == yaml.MappingNode {
			return containerRef{list: key, serving: true, c: c, item: it}, true
		}
	}
	return containerRef{}, false
}

// servesVLLM reports whether KServe serves a predictor's model with vLLM
// by default: its huggingface server runs vLLM for the models vLLM
// supports (its --backend auto), and takes vLLM's flags then; a vLLM
// runtime does too. The flag is honoured there, and ignored where the
// server picks another backend (it parses known arguments only).
func servesVLLM(r containerRef) bool {
	if !r.serving {
		return false
	}
	format := strings.ToLower(splice.Str(splice.Lookup(r.c, "modelFormat"), "name"))
	runtime := strings.ToLower(splice.Str(r.c, "runtime"))
	if r.list != "huggingface" && format != "huggingface" && format != "vllm" &&
		!strings.Contains(runtime, "vllm") && !strings.Contains(runtime, "huggingface") {
		return false
	}
	// --backend=huggingface (or the separate form) turns vLLM off.
	_, args := splice.Field(r.c, "args")
	if args == nil || args.Kind != yaml.SequenceNode {
		return true
	}
	for i, it := range args.Content {
		v := strings.TrimSpace(it.Value)
		if v == "--backend=huggingface" || v == "--backend" && i+1 < len(args.Content) && args.Content[i+1].Value == "huggingface" {
			return false
		}
	}
	return true
}
