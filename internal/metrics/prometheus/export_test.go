package prometheus

import (
	"errors"
	"io"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
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

// Table is what a selector's answers are decoded into, one after another,
// as the pieces of its range are.
type Table struct{ t *seriesTable }

func NewTable() *Table { return &Table{t: newSeriesTable()} }

// NewTableAhead is NewTable with the room an answer is given beyond
// doubling bounded at limit samples in place of maxAheadSamples.
func NewTableAhead(limit int) *Table {
	t := newSeriesTable()
	t.aheadLimit = limit
	return &Table{t: t}
}

// Decode decodes an answer into the table as a fetch does: what a failed
// one, or one that is no matrix, put there is taken out.
func (t *Table) Decode(r io.Reader, until int64) error {
	t.t.mark()
	a, err := decodeInto(r, until, t.t)
	if err == nil && a.bad != "" {
		err = errors.New(a.bad)
	}
	if err != nil {
		t.t.undo()
	}
	return err
}

// Rooms is the room each series of the table holds, in samples, by its
// metric name.
func (t *Table) Rooms() map[string]int {
	rooms := make(map[string]int)
	for _, s := range t.t.list {
		rooms[s.Metric] = cap(s.Samples)
	}
	return rooms
}

// Series are the table's series as a fetch returns them: in time order,
// one sample an instant, sorted by labels.
func (t *Table) Series() []metrics.Series { return join([]*seriesTable{t.t}) }

// ParseValue is the fast path of a sample value; ok is false where
// strconv.ParseFloat reads it instead.
var ParseValue = parseValue

// EightDigits reads eight ASCII digits at once.
var EightDigits = eightDigits

// Slab is where a table carves its series' room.
type Slab struct{ s slab }

// Resize returns xs with room for c samples, as the slab gives it.
func (s *Slab) Resize(xs []usage.Sample, c int) []usage.Sample { return s.s.resize(xs, c) }
