package metrics

import "strings"

// KSMLabelName is the label name kube-state-metrics gives a Kubernetes
// label or annotation key in kube_<kind>_labels and
// kube_<kind>_annotations: prefix ("label" or "annotation"), "_", then the
// key with every character outside [a-zA-Z0-9_] made "_", an "_" put
// between a lower-case letter or a digit and the upper-case letter after
// it, and all of it lower case (kube-state-metrics v2.20.0,
// internal/store/utils.go: labelName, SanitizeLabelName, toSnakeCase).
// So nodePool is label_node_pool and kai.scheduler/queue is
// label_kai_scheduler_queue.
//
// Two keys that come out alike are told apart by kube-state-metrics with
// a _conflict<N> suffix, which this does not reproduce: such a key is not
// found, never confused with the other.
func KSMLabelName(prefix, key string) string {
	var b strings.Builder
	b.Grow(len(prefix) + 1 + len(key) + 4)
	b.WriteString(prefix)
	b.WriteByte('_')
	var prev rune
	for _, c := range key {
		// Upstream's regular expression replaces a character, not a byte.
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			c = '_'
		}
		if c >= 'A' && c <= 'Z' {
			if prev >= 'a' && prev <= 'z' || prev >= '0' && prev <= '9' {
				b.WriteByte('_')
			}
			b.WriteRune(c + 'a' - 'A')
		} else {
			b.WriteRune(c)
		}
		prev = c
	}
	return b.String()
}

// KSMResourceName is a resource's name as kube-state-metrics writes it in
// the resource label of kube_*_resource_* and kube_node_status_*: every
// character outside [a-zA-Z0-9_] made "_", the case kept
// (nvidia.com/gpu is nvidia_com_gpu).
func KSMResourceName(resource string) string {
	return strings.Map(func(c rune) rune {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			return c
		}
		return '_'
	}, resource)
}
