package openmetrics

import (
	"maps"
	"slices"
	"time"
)

// StragglerGap is how far after the rest of a recording a sample must be
// to count as a straggler (with fewer than one scrape's worth of samples
// after it): half an hour, far more than any scrape interval, and less
// than the shortest window a policy reads, so that one sample dated ahead
// cannot leave the evaluation time where no other sample is.
const StragglerGap = 30 * time.Minute

// EvalAfter is how far after a recording's newest sample an evaluation
// time still makes sense: a day.
const EvalAfter = 24 * time.Hour

// Span is the time a recording covers, for choosing and checking an
// evaluation time.
type Span struct {
	// Oldest and Newest are the first and last sample of the bulk of the
	// recording; both zero when it holds none.
	Oldest, Newest time.Time
	// Stragglers counts the samples after Newest: fewer than one per
	// series, more than StragglerGap after the rest, which a wrong clock
	// writes. They are left out of Newest so that one of them cannot drag
	// the evaluation time away from every other sample.
	Stragglers int
	// Straggler is the newest of them and Line the line it was read
	// from, for the warning; zero when there are none.
	Straggler time.Time
	Line      int
}

// Span returns the span of the whole recording without its stragglers,
// samples left out by KeepMetrics or KeepWindow included.
//
// A straggler is defined robustly, so that a genuine recording never
// loses its end: sort every sample time, and look among the newest 1% of
// the samples (at least one) for a gap of more than StragglerGap; the
// samples after the earliest such gap are stragglers if they are fewer
// than the recording's series, since one scrape after an outage writes a
// sample of every series it still has. A lone sample dated two hours or
// a year ahead is one; a recording whose last tenth, or last scrape,
// comes after an outage is not, and keeps its end.
func (r *Recorded) Span() Span { return r.span }

// sampleTimes counts sample times as they stream past, in enough detail
// to find the span's stragglers exactly without keeping every time: per
// StragglerGap of time (a "day" below), how many samples and the first and
// last. A gap of more than StragglerGap between two consecutive times can
// only fall between days, so the days' bounds and counts are all the
// search needs, and memory grows with the time a recording covers, not
// its samples.
type sampleTimes struct {
	n        int
	min, max int64
	days     map[int64]*dayTimes
	// cur caches the day of the previous sample: a series is written in
	// time order, so most samples fall on the day before them.
	cur    *dayTimes
	curDay int64
}

type dayTimes struct {
	n      int
	lo, hi int64
}

func (st *sampleTimes) add(t int64) {
	if st.n == 0 || t < st.min {
		st.min = t
	}
	if st.n == 0 || t > st.max {
		st.max = t
	}
	st.n++
	d := floorDiv(t, StragglerGap.Milliseconds())
	if st.cur == nil || d != st.curDay {
		if st.days == nil {
			st.days = make(map[int64]*dayTimes)
		}
		dt, ok := st.days[d]
		if !ok {
			dt = &dayTimes{lo: t, hi: t}
			st.days[d] = dt
		}
		st.cur, st.curDay = dt, d
	}
	st.cur.n++
	st.cur.lo, st.cur.hi = min(st.cur.lo, t), max(st.cur.hi, t)
}

// span finds the span as the sort of every time would: line names where
// the newest sample was read, and series is how many series the
// recording holds.
func (st *sampleTimes) span(line func(t int64) int, series int) Span {
	if st.n == 0 {
		return Span{}
	}
	n := st.n
	sp := Span{Oldest: time.UnixMilli(st.min).UTC(), Newest: time.UnixMilli(st.max).UTC()}
	gap := StragglerGap.Milliseconds()
	// from is the first index, in time order, the search looks at.
	from := max(1, n-max(1, n/100))
	before := 0 // samples before the day
	var prev *dayTimes
	for _, d := range slices.Sorted(maps.Keys(st.days)) {
		dt := st.days[d]
		if prev != nil && before >= from && dt.lo-prev.hi > gap && n-before < series {
			sp.Newest = time.UnixMilli(prev.hi).UTC()
			sp.Stragglers = n - before
			sp.Straggler = time.UnixMilli(st.max).UTC()
			sp.Line = line(st.max)
			break
		}
		before += dt.n
		prev = dt
	}
	return sp
}

// floorDiv divides rounding toward minus infinity, so that a day holds
// the times of one day before the epoch as after it.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b < 0 {
		q--
	}
	return q
}

// String writes the span as its first and last time.
func (sp Span) String() string {
	return sp.Oldest.Format(time.RFC3339) + " to " + sp.Newest.Format(time.RFC3339)
}
