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

// SetBodyBounds lowers the size limits of p's answers: each one, and all
// those being read at once.
func SetBodyBounds(p *Prometheus, perAnswer, inFlight int64) {
	p.transport.maxBody = perAnswer
	p.transport.inFlight = &bodyBudget{left: inFlight}
}

// InFlightLeft is what p's answers being read may still take.
func InFlightLeft(p *Prometheus) int64 {
	p.transport.inFlight.mu.Lock()
	defer p.transport.inFlight.mu.Unlock()
	return p.transport.inFlight.left
}
