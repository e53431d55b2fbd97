package metrics

import "github.com/gpu-rightsizing/recommender/internal/usage"

// MatchDeploymentPod is matchDeploymentPod, for the external tests to
// check directly.
var MatchDeploymentPod = matchDeploymentPod

// The name patterns of the other kinds, for the same.
var (
	MatchStatefulSetPod = matchStatefulSetPod
	MatchLWSPod         = matchLWSPod
	MatchLWSStatefulSet = matchLWSStatefulSet
)

// Claim is claim, its answer spelled out.
func Claim(candidates []usage.Ref, pod string) (ref usage.Ref, ok bool, rivals []usage.Ref) {
	a := claim(newRefIndex(candidates, nil), pod)
	return a.ref, a.ok, a.rivals
}
