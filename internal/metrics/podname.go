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
