package metrics

import (
	"slices"
	"time"
)

// StragglerGap is how far after the rest of a recording a sample must be
// to count as a straggler, and how far after its newest sample an
// evaluation time still makes sense: a day, far more than any scrape
// interval or outage a recording of usage is taken across.
const StragglerGap = 24 * time.Hour

// Span is the time a recording covers, for choosing and checking an
// evaluation time.
type Span struct {
	// Oldest and Newest are the first and last sample of the bulk of the
	// recording; both zero when it holds none.
	Oldest, Newest time.Time
	// Stragglers counts the samples after Newest: a few samples more than
	// StragglerGap after the rest, which a wrong clock writes. They are
	// left out of Newest so that one of them cannot drag the evaluation
	// time away from every other sample.
	Stragglers int
	// Straggler is the newest of them and Line the line it was read
	// from, for the warning; zero when there are none.
	Straggler time.Time
	Line      int
}

// Span returns the span of the recording without its stragglers.
//
// A straggler is defined robustly, so that a genuine recording never
// loses its end: sort every sample time, and look among the newest 1% of
// the samples (at least one) for a gap of more than StragglerGap; the
// samples after the earliest such gap are stragglers. A lone sample dated
// a year ahead is one; a recording whose last tenth comes after a
// two-day outage is not, and keeps its end. It costs a sort of every
// sample time, so it is computed on demand, once per run.
func (r *Recorded) Span() Span {
	n := 0
	for _, s := range r.set.series {
		n += len(s.Samples)
	}
	if n == 0 {
		return Span{}
	}
	ts := make([]int64, 0, n)
	for _, s := range r.set.series {
		for _, x := range s.Samples {
			ts = append(ts, x.T)
		}
	}
	slices.Sort(ts)
	sp := Span{Oldest: time.UnixMilli(ts[0]).UTC(), Newest: time.UnixMilli(ts[n-1]).UTC()}
	gap := StragglerGap.Milliseconds()
	for k := max(1, n-max(1, n/100)); k < n; k++ {
		if ts[k]-ts[k-1] > gap {
			sp.Newest = time.UnixMilli(ts[k-1]).UTC()
			sp.Stragglers = n - k
			sp.Straggler = time.UnixMilli(ts[n-1]).UTC()
			sp.Line = r.lineOf(ts[n-1])
			break
		}
	}
	return sp
}

// lineOf returns the line of a series' newest sample taken at t, 0 when
// none is.
func (r *Recorded) lineOf(t int64) int {
	for _, s := range r.set.series {
		if k := len(s.Samples); k > 0 && s.Samples[k-1].T == t {
			return s.line
		}
	}
	return 0
}

// String writes the span as its first and last time.
func (sp Span) String() string {
	return sp.Oldest.Format(time.RFC3339) + " to " + sp.Newest.Format(time.RFC3339)
}
