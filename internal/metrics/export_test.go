package metrics

// Internals that the external tests check directly.
var (
	MatchDeploymentPod = matchDeploymentPod
	ParseValue         = parseValue
	ParseTimestamp     = parseTimestamp
)

// RetryAfter reads a Retry-After header.
var RetryAfter = retryAfter

// SetMaxResponseBytes lowers the size limit of p's answers.
func SetMaxResponseBytes(p *Prometheus, n int64) { p.transport.maxBody = n }
