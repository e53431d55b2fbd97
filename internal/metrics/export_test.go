package metrics

// MatchDeploymentPod is matchDeploymentPod, for the external tests to
// check directly.
var MatchDeploymentPod = matchDeploymentPod
