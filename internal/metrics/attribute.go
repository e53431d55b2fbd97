package metrics

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The workload kinds whose pods can be told by their names, as usage.Ref
// spells them.
const (
	kindDeployment  = "Deployment"
	kindRollout     = "Rollout" // argoproj.io/v1alpha1
	kindStatefulSet = "StatefulSet"
	kindLWS         = "LeaderWorkerSet"  // leaderworkerset.x-k8s.io/v1
	kindISVC        = "InferenceService" // serving.kserve.io/v1beta1
	// kindDGD is a Dynamo graph's service, named as the Deployment the
	// operator runs it as: <graph>-<service, lowercased>
	// (GetDynamoComponentName; the DynamoComponentDeployment's Deployment
	// takes its name, generateDeployment in ai-dynamo/dynamo's operator).
	kindDGD = "DynamoGraphDeployment" // nvidia.com/v1alpha1
)

// generated reports whether a kind's pods are named as a ReplicaSet names
// them. An Argo Rollout makes ReplicaSets named <rollout>-<hash>, the hash
// computed and encoded as a Deployment's (argo-rollouts, rollout/sync.go,
// utils/hash), so its pods are named as a Deployment's; a Dynamo service
// runs as a Deployment named as its Ref.
func generated(kind string) bool {
	return kind == kindDeployment || kind == kindRollout || kind == kindDGD
}

// named reports whether the pods of a kind can be attributed by their
// names when kube-state-metrics does not say who owns them.
func named(kind string) bool {
	return generated(kind) || kind == kindStatefulSet || kind == kindLWS || kind == kindISVC
}

// fits reports whether pod can be a pod of workload c by its name, under
// the naming rule of c's kind.
func (x *refIndex) fits(c usage.Ref, pod string) bool {
	switch c.Kind {
	case kindDeployment, kindRollout, kindDGD:
		_, ok := matchDeploymentPod(c.Name, pod)
		return ok
	case kindStatefulSet:
		return matchStatefulSetPod(c.Name, pod)
	case kindLWS:
		return matchLWSPod(c.Name, pod)
	case kindISVC:
		return matchPredictorPod(x.service(c), pod)
	}
	return false
}

// compareRefs orders candidates, so that attribution and its warnings do
// not depend on the order of a query.
func compareRefs(a, b usage.Ref) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Kind, b.Kind), strings.Compare(a.Name, b.Name))
}

// refIndex holds workloads by name for the naming rules, so that a pod
// is matched against the few workloads its name can fit rather than every
// workload of its namespace. Every rule makes the name it matches (a
// pod's, a ReplicaSet's, a StatefulSet's, a Deployment's) the workload's
// name itself, or start with it and a dash, or, cut at 58 bytes, with its
// first 58 bytes: so a name's prefixes before each dash, the name itself
// and its first 58 bytes are the only keys workloads that fit it can be
// under. A lookup costs the name's length, whatever the workloads.
type refIndex struct {
	refs []usage.Ref
	// byKey lists, per key, the refs (their positions) named so, or
	// whose names are longer than 58 bytes and start so.
	byKey map[string][]int
	// components are the predictor names of InferenceServices that set
	// one (usage.Query.Components).
	components map[usage.Ref]string
}

// newRefIndex indexes refs, whose order near keeps; components are the
// predictor names of InferenceServices among them.
func newRefIndex(refs []usage.Ref, components map[usage.Ref]string) *refIndex {
	x := &refIndex{refs: refs, byKey: make(map[string][]int, len(refs)), components: components}
	for i, r := range refs {
		x.byKey[r.Name] = append(x.byKey[r.Name], i)
		if len(r.Name) > maxGeneratedPrefix {
			k := r.Name[:maxGeneratedPrefix]
			x.byKey[k] = append(x.byKey[k], i)
		}
	}
	return x
}

// service is the name KServe gives InferenceService r's predictor.
func (x *refIndex) service(r usage.Ref) string {
	return predictorService(r.Name, x.components[r])
}

// near returns, in the index's order, the workloads that a naming rule
// could let name fit: those named name, or a prefix of it a dash
// follows, or its first 58 bytes. The rules themselves still decide.
func (x *refIndex) near(name string) []usage.Ref {
	var at []int
	at = append(at, x.byKey[name]...)
	for i := 0; i < len(name); i++ {
		if name[i] == '-' {
			at = append(at, x.byKey[name[:i]]...)
		}
	}
	if len(name) > maxGeneratedPrefix {
		at = append(at, x.byKey[name[:maxGeneratedPrefix]]...)
	}
	if len(at) == 0 {
		return nil
	}
	slices.Sort(at)
	at = slices.Compact(at)
	out := make([]usage.Ref, len(at))
	for i, j := range at {
		out[i] = x.refs[j]
	}
	return out
}

// attribution is what a query knows of the workload of one pod.
type attribution struct {
	ref usage.Ref
	ok  bool
	// rivals are the other workloads whose naming rule fits as well. With
	// ok, the pod counts for ref all the same (the longest of names cut
	// alike); without, nothing tells them apart and the pod counts for
	// none of them.
	rivals []usage.Ref
	// via is the pod's owner when the rivals fit its name rather than the
	// pod's: a ReplicaSet without kube_replicaset_owner, or a StatefulSet,
	// whose owner kube-state-metrics does not report.
	via usage.Ref
}

// claim attributes a pod by its name alone, among candidates sorted by
// compareRefs. Names of the Deployment shape fit several workloads only
// when Kubernetes cut them at 58 bytes, and then the longest name is the
// one whose pod shows more of it. Any other overlap is a tie: a pod
// chat-2-1 is as much LeaderWorkerSet chat's (group 2, worker 1) as
// chat-2's (group 1's leader). Only candidates compete: without owner
// series nothing names a StatefulSet or LeaderWorkerSet that was not asked
// for, so llm-2's leader llm-2-1 counts for llm when llm-2 is not asked
// for; owner series tell them apart.
func claim(candidates *refIndex, pod string) attribution {
	var matches []usage.Ref
	for _, c := range candidates.near(pod) {
		if candidates.fits(c, pod) {
			matches = append(matches, c)
		}
	}
	switch {
	case len(matches) == 0:
		return attribution{}
	case len(matches) == 1:
		return attribution{ref: matches[0], ok: true}
	}
	best := matches[0]
	for _, c := range matches {
		if !generated(c.Kind) {
			return attribution{rivals: matches}
		}
		if len(c.Name) > len(best.Name) {
			best = c
		}
	}
	var others []usage.Ref
	for _, c := range matches {
		if c == best {
			continue
		}
		if len(c.Name) == len(best.Name) {
			return attribution{rivals: matches}
		}
		others = append(others, c)
	}
	return attribution{ref: best, ok: true, rivals: others}
}

// warning says why a pod with rivals counts for its workload, or for none;
// x names their predictors.
func (a attribution) warning(x *refIndex, ns, pod string) string {
	if a.via.Kind != "" {
		why := "kube-state-metrics reports no owner of a StatefulSet, and its pods do not tell"
		switch {
		case x.twins(a.rivals):
			why = predictorTwins
		case a.via.Kind == "ReplicaSet":
			why = "no kube_replicaset_owner series names its owner; record it to attribute the pod"
		}
		return fmt.Sprintf("pod %s/%s counts for no workload: its %s %s fits %s alike (%s)",
			ns, pod, a.via.Kind, a.via.Name, listRefs(a.rivals, ""), why)
	}
	matched := a.rivals
	if a.ok {
		matched = append([]usage.Ref{a.ref}, a.rivals...)
	}
	why := "their naming rules overlap"
	if cut(matched) {
		why = "Kubernetes cut it at 58 characters"
	}
	switch {
	case !a.ok && x.twins(a.rivals):
		return fmt.Sprintf("pod %s/%s counts for no workload: its name fits %s alike (%s)",
			ns, pod, listRefs(a.rivals, ""), predictorTwins)
	case !a.ok:
		return fmt.Sprintf("pod %s/%s counts for no workload: its name fits %s alike (%s); record kube_pod_owner to attribute it",
			ns, pod, listRefs(a.rivals, ""), why)
	}
	return fmt.Sprintf("pod %s/%s counts for %s %s, the longest name it fits, but fits %s too (%s); record kube_pod_owner to be sure",
		ns, pod, a.ref.Kind, a.ref.Name, listRefs(a.rivals, a.ref.Kind), why)
}

// predictorTwins says why an InferenceService and a Deployment named as
// its predictor tie without kube_deployment_owner.
const predictorTwins = "a Deployment of its predictor's name is either; record kube_deployment_owner (kube-state-metrics v2.18 or later) to tell them apart"

// twins reports whether refs hold an InferenceService and a Deployment
// that can be its predictor's: pod and ReplicaSet owner series, which
// stop at the Deployment, cannot tell them apart.
func (x *refIndex) twins(refs []usage.Ref) bool {
	for _, i := range refs {
		for _, d := range refs {
			if i.Kind == kindISVC && d.Kind == kindDeployment && matchPredictorDeployment(x.service(i), d.Name) {
				return true
			}
		}
	}
	return false
}

// cut reports whether workloads fit one pod name only because Kubernetes
// cut it: Deployment-shaped names that differ.
func cut(refs []usage.Ref) bool {
	differ := false
	for _, r := range refs {
		if !generated(r.Kind) {
			return false
		}
		differ = differ || r.Name != refs[0].Name
	}
	return differ
}

// listRefs writes workloads for a warning: "Deployments a, b" when they
// share a kind, only their names when that kind is known (of), and each
// with its kind otherwise.
func listRefs(refs []usage.Ref, of string) string {
	same := true
	for _, r := range refs {
		same = same && r.Kind == refs[0].Kind
	}
	parts := make([]string, len(refs))
	for i, r := range refs {
		parts[i] = r.Name
		if !same {
			parts[i] = r.Kind + " " + r.Name
		}
	}
	list := strings.Join(parts, ", ")
	switch {
	case !same || of == refs[0].Kind:
		return list
	case len(refs) > 1:
		return refs[0].Kind + "s " + list
	}
	return refs[0].Kind + " " + list
}
