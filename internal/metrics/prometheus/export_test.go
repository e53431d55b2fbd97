package prometheus

// RetryAfter reads a Retry-After header.
var RetryAfter = retryAfter

// SetMaxResponseBytes lowers the size limit of p's answers.
func SetMaxResponseBytes(p *Source, n int64) { p.transport.maxBody = n }

// SetBodyBounds lowers the size limits of p's answers: each one, and all
// those being read at once.
func SetBodyBounds(p *Source, perAnswer, inFlight int64) {
	p.transport.maxBody = perAnswer
	p.transport.inFlight = &bodyBudget{left: inFlight}
}

// InFlightLeft is what p's answers being read may still take.
func InFlightLeft(p *Source) int64 {
	p.transport.inFlight.mu.Lock()
	defer p.transport.inFlight.mu.Unlock()
	return p.transport.inFlight.left
}
