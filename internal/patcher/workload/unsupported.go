package workload

import (
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Unsupported is an object of the repository that the tool does not size
// but must not pass over in silence: one that asks for GPUs, or that owns
// pods (a StatefulSet, a Rollout, …) where a policy may select it. The
// plan gives it a row with cause unsupported, never nothing.
type Unsupported struct {
	// Ref names it; Kind is its kind.
	Ref        usage.Ref
	APIVersion string
	Labels     map[string]string
	File       string
	Line       int
	// GPU says it asks for GPUs: nvidia.com/gpu, a gpu-fraction or
	// gpu-memory annotation, or KAI's scheduler.
	GPU bool
	// Why says what is missing when the kind is one that is sized, in a
	// shape that is not (a Rollout whose spec.workloadRef is not
	// followed: FollowRefs says why).
	Why string
	// WorkloadRef is a Rollout's spec.workloadRef, nil when it has none.
	WorkloadRef *WorkloadRef
}

// podOwnerKinds are the kinds that run pods from a template, which a
// policy's workloadTypes may name; those SpecFor sizes are read as
// workloads instead.
var podOwnerKinds = []string{"StatefulSet", "DaemonSet", "Job", "CronJob", "ReplicaSet", "Pod",
	"Rollout", "LeaderWorkerSet", "InferenceService", "DynamoGraphDeployment"}

// unsupportedObject reads root as an Unsupported, ok false when it is
// neither a pod owner nor asks for GPUs, or when it is a kind the tool
// reads (those are workloads).
func unsupportedObject(root *yaml.Node) (Unsupported, bool) {
	if root == nil || root.Kind != yaml.MappingNode {
		return Unsupported{}, false
	}
	kind, apiVersion := splice.Str(root, "kind"), splice.Str(root, "apiVersion")
	if kind == "" || apiVersion == "" {
		return Unsupported{}, false
	}
	if _, _, ok := Identify(root); ok || isDynamo(root) {
		return Unsupported{}, false
	}
	md := splice.Lookup(root, "metadata")
	u := Unsupported{Ref: usage.Ref{Kind: kind, Namespace: splice.Str(md, "namespace"), Name: splice.Str(md, "name")}, APIVersion: apiVersion,
		Labels: splice.StringMap(splice.Lookup(md, "labels")), GPU: asksForGPU(root)}
	if spec, ok := SpecFor(kind); ok && spec.dynamo && spec.accepts(apiVersion) {
		u.Why = fmt.Sprintf("%s only, whose spec.services are read; %s is not", dynamoAPIVersion, apiVersion)
	} else if ok && spec.accepts(apiVersion) {
		// Identify passed it over: a Rollout that runs another object's
		// template. FollowRefs makes it a workload when it can.
		u.WorkloadRef = readWorkloadRef(root)
		u.Why = "its pod template is the one of the object spec.workloadRef names, which is not followed"
	} else if ok {
		// The same kind in another API (KFServing's serving.kubeflow.org
		// InferenceService): its fields are not the ones read.
		u.Why = fmt.Sprintf("in API group %s only, whose fields are the ones read", strings.Join(spec.groups, " and "))
	}
	if u.Ref.Name == "" || !u.GPU && !slices.Contains(podOwnerKinds, kind) {
		return Unsupported{}, false
	}
	return u, true
}

// asksForGPU reports whether anything in n asks for GPUs the way a pod
// does: a nvidia.com/gpu resource, KAI's gpu-fraction or gpu-memory
// annotation, or KAI's scheduler.
func asksForGPU(n *yaml.Node) bool {
	if n == nil {
		return false
	}
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i].Value, n.Content[i+1]
			switch {
			case k == "nvidia.com/gpu" || k == kai.FractionAnnotation || k == "gpu-memory":
				return true
			case k == "schedulerName" && v.Kind == yaml.ScalarNode && v.Value == "kai-scheduler":
				return true
			}
		}
	}
	return slices.ContainsFunc(n.Content, asksForGPU)
}

// UnsupportedIn reads the Unsupported objects of a parsed stream, each
// placed at file (and the document's line, when line is set).
func UnsupportedIn(s *splice.Stream, file string, line bool) []Unsupported {
	var out []Unsupported
	for _, doc := range s.Docs {
		if len(doc.Content) == 0 {
			continue
		}
		// line is set for a plain file, not for what is built or rendered.
		if u, ok := unsupportedObject(doc.Content[0]); ok {
			u.File = file
			if line {
				u.Line = doc.Line
			}
			out = append(out, u)
		}
	}
	return out
}
