package metrics

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
)

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
// PredictorServiceName writes <isvc>-predictor, or <isvc>-<name>-predictor
// when spec.predictor.name is set: the name of its Deployment in Standard
// (RawDeployment) mode and of its Knative Service in Knative (Serverless)
// mode (kserve v0.20.0, pkg/constants/constants.go). Knative names a
// revision kmeta.ChildName(<service>, "-%05d" of the generation) and its
// Deployment kmeta.ChildName(<revision>, "-deployment")
// (knative/serving, pkg/reconciler/configuration/resources/revision.go,
// pkg/reconciler/revision/resources/names; knative/pkg kmeta/names.go).
const (
	predictorSuffix    = "-predictor"
	revisionDeployment = "-deployment"
	minRevisionDigits  = 5
)

// predictorService is the name KServe gives InferenceService isvc's
// predictor, whose spec.predictor.name is component ("" when unset).
func predictorService(isvc, component string) string {
	if component == "" {
		return isvc + predictorSuffix
	}
	return isvc + "-" + component + predictorSuffix
}

// The bounds of kmeta.ChildName: a Kubernetes name's 63 characters, and
// the 32 hex digits of an MD5 sum that stand for a parent cut short.
const (
	longestName = 63
	md5Hex      = 32
	childHead   = longestName - md5Hex
)

// childName is the name Knative gives a child of parent: parent+suffix,
// or, past 63 characters, parent cut to leave room for the MD5 sum of the
// whole parent in hex, then suffix (kmeta.ChildName for suffixes shorter
// than 31 characters, as Knative's revision and Deployment suffixes are).
func childName(parent, suffix string) string {
	if len(parent) <= longestName-len(suffix) || childHead-len(suffix) <= 0 {
		return parent + suffix
	}
	sum := md5.Sum([]byte(parent))
	return parent[:childHead-len(suffix)] + hex.EncodeToString(sum[:]) + suffix
}

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

// matchPredictorRevision reports whether rev can be a revision of the
// predictor named service in Knative mode.
func matchPredictorRevision(service, rev string) bool {
	i := strings.LastIndexByte(rev, '-')
	return i >= 0 && isRevision(rev[i+1:]) && childName(service, rev[i:]) == rev
}

// matchPredictorDeployment reports whether Deployment d can run the
// predictor named service: d itself in Standard mode; in Knative mode a
// revision's Deployment, <service>-<generation>-deployment, or past 63
// characters one that childName cut and hashed. A hashed name shows the
// first 20 characters of its revision, which start as service does, and
// the hash of a revision it cannot be checked against without the
// revision's name (matchRevisionDeployment checks that).
func matchPredictorDeployment(service, d string) bool {
	if service == "" || d == service {
		return service != ""
	}
	if rest, ok := strings.CutPrefix(d, service+"-"); ok {
		if generation, ok := strings.CutSuffix(rest, revisionDeployment); ok && isRevision(generation) {
			return true
		}
	}
	head := childHead - len(revisionDeployment)
	prefix := service + "-"
	if len(prefix) > head {
		prefix = prefix[:head]
	}
	return len(d) == longestName && strings.HasPrefix(d, prefix) && strings.HasSuffix(d, revisionDeployment) &&
		isHex(d[head:head+md5Hex]) && (len(prefix) == head || isRevision(d[len(prefix):head]))
}

// matchRevisionDeployment reports whether Deployment d is revision rev's.
func matchRevisionDeployment(rev, d string) bool {
	return childName(rev, revisionDeployment) == d
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// matchISVCDeployment is matchPredictorDeployment for an InferenceService
// whose predictor has no name of its own.
func matchISVCDeployment(isvc, d string) bool {
	return isvc != "" && matchPredictorDeployment(predictorService(isvc, ""), d)
}

// matchPredictorReplicaSet reports whether ReplicaSet rs can be one of
// the predictor Deployments' of service: <deployment>-<hash>.
func matchPredictorReplicaSet(service, rs string) bool {
	i := strings.LastIndexByte(rs, '-')
	return i > 0 && matchPredictorDeployment(service, rs[:i]) && matchReplicaSet(rs[:i], rs)
}

// matchISVCReplicaSet is matchPredictorReplicaSet for an unnamed predictor.
func matchISVCReplicaSet(isvc, rs string) bool {
	return isvc != "" && matchPredictorReplicaSet(predictorService(isvc, ""), rs)
}

// matchPredictorPod reports whether pod can be a pod of the predictor
// named service by its name: a pod of its Deployment, under the
// Deployment pattern, in either mode. A name cut at 58 bytes inside the
// revision still fits: the revision shown stands for the whole.
func matchPredictorPod(service, pod string) bool {
	if service == "" || len(pod) <= randomSuffixLen {
		return false
	}
	if _, ok := matchDeploymentPod(service, pod); ok {
		return true
	}
	prefix := pod[:len(pod)-randomSuffixLen]
	if len(prefix) == maxGeneratedPrefix && !isSafe(pod[len(prefix):]) {
		return false
	}
	rest, ok := strings.CutPrefix(prefix, service+"-")
	if !ok {
		// A Deployment name Knative hashed, cut at 58 bytes.
		return hashedPredictorPod(service, prefix)
	}
	generation := rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))]
	cutInside := generation == rest && len(prefix) == maxGeneratedPrefix
	if !isRevision(generation) && !cutInside {
		return hashedPredictorPod(service, prefix)
	}
	_, ok = matchDeploymentPod(service+"-"+generation+revisionDeployment, pod)
	return ok
}

// hashedPredictorPod reports whether prefix, a pod name without its
// random suffix, is a pod of a Knative Deployment whose 63-character
// name childName hashed: always cut to its first 58 bytes.
func hashedPredictorPod(service, prefix string) bool {
	head := childHead - len(revisionDeployment)
	want := service + "-"
	if len(want) > head {
		want = want[:head]
	}
	return len(prefix) == maxGeneratedPrefix && strings.HasPrefix(prefix, want) && isHex(prefix[head:head+md5Hex]) &&
		prefix[head+md5Hex:] == revisionDeployment[:maxGeneratedPrefix-head-md5Hex] &&
		(len(want) == head || isRevision(prefix[len(want):head]))
}

// matchISVCPod is matchPredictorPod for an unnamed predictor.
func matchISVCPod(isvc, pod string) bool {
	return isvc != "" && matchPredictorPod(predictorService(isvc, ""), pod)
}
