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

// claim returns the deployment among candidates that pod belongs to by its
// name: the longest name that matches. Several can match only when names
// reach the 58-byte cut, so that the pod's name shows little or none of
// the hash; others then lists the other names that match. When the longest
// match is not unique, nothing tells the pod apart, and claim returns no
// deployment.
func claim(candidates []string, pod string) (d string, others []string) {
	var matches []string
	for _, c := range candidates {
		if _, ok := matchDeploymentPod(c, pod); ok {
			matches = append(matches, c)
		}
	}
	for _, c := range matches {
		if len(c) > len(d) {
			d = c
		}
	}
	for _, c := range matches {
		if c != d {
			others = append(others, c)
		}
	}
	for _, c := range others {
		if len(c) == len(d) {
			return "", matches
		}
	}
	return d, others
}
