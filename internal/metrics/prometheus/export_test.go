package prometheus

import (
	"io"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
)

// RetryAfter reads a Retry-After header.
var RetryAfter = retryAfter

// SetMaxResponseBytes lowers the size limit of p's answers.
func SetMaxResponseBytes(p *Source, n int64) { p.transport.maxBody = n }

// SetBodyBounds lowers the size limits of p's answers: each one, and all
// those being read at once.
func SetBodyBounds(p *Source, perAnswer, inFlight int64) {
	p.transport.maxBody = perAnswer
	p.transport.inFlight = &bodyBudget{left: inFlight}
	p.transport.inFlightMax = inFlight
}

// InFlightLeft is what p's answers being read may still take.
func InFlightLeft(p *Source) int64 {
	p.transport.inFlight.mu.Lock()
	defer p.transport.inFlight.mu.Unlock()
	return p.transport.inFlight.left
}

// Answer is what DecodeAnswer read of a response.
type Answer struct {
	Status, ErrorType, Error string
	Warnings                 []string
	ResultType               string
	Series                   []metrics.Series
	// Bad says why the result is no matrix of samples.
	Bad string
}

// DecodeAnswer is the streaming decoder of a response body; until is the
// newest time asked for, in Unix ms.
func DecodeAnswer(r io.Reader, until int64) (Answer, error) {
	a, err := decodeAnswer(r, until)
	if err != nil {
		return Answer{}, err
	}
	return Answer{Status: a.status, ErrorType: a.errorType, Error: a.errorMsg, Warnings: a.warnings,
		ResultType: a.resultType, Series: a.series, Bad: a.bad}, nil
}
