package metrics

// Internals that the external tests check directly.
var (
	MatchDeploymentPod = matchDeploymentPod
	ParseValue         = parseValue
	ParseTimestamp     = parseTimestamp
)
