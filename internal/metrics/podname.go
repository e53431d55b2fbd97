package metrics

import "strings"

// How Kubernetes names the pods of a Deployment: the ReplicaSet is named
// <deployment>-<pod-template-hash>, and its pods <replicaset>-<random>,
// where the name generator cuts "<replicaset>-" to 58 bytes before adding
// 5 random characters, so that the name fits 63.
const (
	maxGeneratedPrefix = 58
	randomSuffixLen    = 5
	maxHashLen         = 10
	// minHashLen: the hash is a uint32 written in decimal, one safe
	// character per digit, so it has fewer than 6 characters once in
	// 40,000 templates. Requiring 6 keeps a Job's or a DaemonSet's pod
	// (chat-2-k8s9q) from passing for a pod of Deployment chat.
	minHashLen = 6
	// safeChars is the alphabet of the random suffix and of the
	// pod-template hash: no vowels, nothing that reads as a word.
	safeChars = "bcdfghjklmnpqrstvwxz2456789"
)

func isSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(safeChars, s[i]) < 0 {
			return false
		}
	}
	return true
}

// matchDeploymentPod reports whether pod can be a pod of Deployment d by
// its name alone, and how many characters of the pod-template hash the name
// still shows (fewer than the hash has when the generator cut the name;
// none when the deployment name itself reaches the cut).
//
// The pattern is strict on purpose: the hash and suffix use the safe
// alphabet, which has no vowels, so chat-canary-6d4b9-x2b4z is not a pod of
// chat ("canary" is no hash).
func matchDeploymentPod(d, pod string) (hashShown int, ok bool) {
	if d == "" || len(pod) <= randomSuffixLen {
		return 0, false
	}
	// prefix is "<d>-<hash>-" cut to maxGeneratedPrefix bytes.
	prefix, random := pod[:len(pod)-randomSuffixLen], pod[len(pod)-randomSuffixLen:]
	if len(prefix) > maxGeneratedPrefix || !isSafe(random) {
		return 0, false
	}
	n := len(d)
	if n >= maxGeneratedPrefix {
		return 0, prefix == d[:maxGeneratedPrefix]
	}
	if len(prefix) <= n || prefix[:n] != d || prefix[n] != '-' {
		return 0, false
	}
	rest := prefix[n+1:]
	if n+1 == maxGeneratedPrefix {
		return 0, true // only the dash fitted: rest is empty
	}
	if hash, whole := strings.CutSuffix(rest, "-"); whole {
		return len(hash), len(hash) >= minHashLen && len(hash) <= maxHashLen && isSafe(hash)
	}
	// Without its trailing dash, the hash was cut, so the name must have
	// been cut too.
	return len(rest), len(prefix) == maxGeneratedPrefix && len(rest) <= maxHashLen && isSafe(rest)
}

// matchReplicaSet reports whether a ReplicaSet named rs can belong to
// Deployment d: rs is <d>-<pod-template-hash>, never cut.
func matchReplicaSet(d, rs string) bool {
	n := len(d)
	if n == 0 || len(rs) < n+2 || rs[:n] != d || rs[n] != '-' {
		return false
	}
	hash := rs[n+1:]
	return len(hash) >= minHashLen && len(hash) <= maxHashLen && isSafe(hash)
}

// isOrdinal reports whether s is an ordinal as the StatefulSet controller
// writes it into a pod name (fmt's %d of a non-negative int): decimal
// digits, without a leading zero unless it is "0".
func isOrdinal(s string) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// matchStatefulSetPod reports whether pod can be a pod of StatefulSet s by
// its name: <s>-<ordinal>. Ordinals have no dash, so StatefulSets whose
// names share a prefix never fit one pod alike: chat-2-0 is chat-2's, and
// chat-2 is chat's.
func matchStatefulSetPod(s, pod string) bool {
	ordinal, ok := strings.CutPrefix(pod, s+"-")
	return s != "" && ok && isOrdinal(ordinal)
}

// matchLWSPod reports whether pod can be a pod of LeaderWorkerSet lws by
// its name. A LeaderWorkerSet's leader StatefulSet is named <lws>, so its
// leader pods <lws>-<group>; each group's worker StatefulSet is named after
// its leader pod and numbers its pods from 1, so they are
// <lws>-<group>-<index> with an index of 1 or more (lws, pkg/controllers).
func matchLWSPod(lws, pod string) bool {
	rest, ok := strings.CutPrefix(pod, lws+"-")
	if lws == "" || !ok {
		return false
	}
	group, index, worker := strings.Cut(rest, "-")
	return isOrdinal(group) && (!worker || isOrdinal(index) && index != "0")
}

// matchLWSStatefulSet reports whether StatefulSet sts can be one of
// LeaderWorkerSet lws's: its leader StatefulSet, named lws, or a group's
// worker StatefulSet, <lws>-<group>.
func matchLWSStatefulSet(lws, sts string) bool {
	group, worker := strings.CutPrefix(sts, lws+"-")
	return lws != "" && (sts == lws || worker && isOrdinal(group))
}

// How KServe names an InferenceService's predictor: constants.
// PredictorServiceName writes <isvc>-predictor, the name of its Deployment
// in RawDeployment (Standard) mode and of its Knative Service in Serverless
// (Knative) mode (kserve v0.20.0, pkg/constants/constants.go). Knative
// names a revision <service>-<generation as %05d> and its Deployment
// <revision>-deployment (knative/serving, pkg/reconciler/configuration/
// resources/revision.go, pkg/reconciler/revision/resources/names).
const (
	predictorSuffix    = "-predictor"
	revisionDeployment = "-deployment"
	minRevisionDigits  = 5
)

// isRevision reports whether s is a generation as Knative writes it into a
// revision name: %05d of a positive number, so at least 5 digits, padded
// with zeros only up to 5.
func isRevision(s string) bool {
	if len(s) < minRevisionDigits || len(s) > minRevisionDigits && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// matchISVCDeployment reports whether Deployment d can run InferenceService
// isvc's predictor: <isvc>-predictor in RawDeployment mode, a revision's
// <isvc>-predictor-<generation>-deployment in Serverless mode.
func matchISVCDeployment(isvc, d string) bool {
	service := isvc + predictorSuffix
	if isvc == "" || d == service {
		return isvc != ""
	}
	rest, ok := strings.CutPrefix(d, service+"-")
	if !ok {
		return false
	}
	generation, ok := strings.CutSuffix(rest, revisionDeployment)
	return ok && isRevision(generation)
}

// matchISVCReplicaSet reports whether ReplicaSet rs can be one of
// InferenceService isvc's predictor Deployments': <deployment>-<hash>.
func matchISVCReplicaSet(isvc, rs string) bool {
	i := strings.LastIndexByte(rs, '-')
	return i > 0 && matchISVCDeployment(isvc, rs[:i]) && matchReplicaSet(rs[:i], rs)
}

// matchISVCPod reports whether pod can be a pod of InferenceService isvc's
// predictor by its name: a pod of its Deployment, under the Deployment
// pattern, in either mode. A name cut at 58 bytes inside the revision
// still fits: the revision shown stands for the whole.
func matchISVCPod(isvc, pod string) bool {
	if isvc == "" || len(pod) <= randomSuffixLen {
		return false
	}
	service := isvc + predictorSuffix
	if _, ok := matchDeploymentPod(service, pod); ok {
		return true
	}
	prefix := pod[:len(pod)-randomSuffixLen]
	rest, ok := strings.CutPrefix(prefix, service+"-")
	if !ok {
		return false
	}
	generation := rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))]
	cutInside := generation == rest && len(prefix) == maxGeneratedPrefix
	if !isRevision(generation) && !cutInside {
		return false
	}
	_, ok = matchDeploymentPod(service+"-"+generation+revisionDeployment, pod)
	return ok
}
