package metrics

// The InferenceService name patterns, for the external tests to check
// directly.
var (
	MatchISVCPod        = matchISVCPod
	MatchISVCReplicaSet = matchISVCReplicaSet
	MatchISVCDeployment = matchISVCDeployment

	MatchPredictorRevision = matchPredictorRevision
)
