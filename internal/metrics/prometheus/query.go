package prometheus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Usage answers q from the server.
//
// It reads raw samples: an instant query of a range selector,
// {__name__=~"…", namespace=~"…"}[24h], returns every sample stored in the
// range with its own timestamp, exactly what a recording holds. A range
// query would not do: it evaluates at step-aligned times, and a series
// that stopped reporting keeps its last value for the 5-minute lookback,
// hiding the gaps that must block a scale-back. The scrape interval is
// then inferred from the samples themselves, as for a recording.
//
// The requests depend on the query's metrics and lookback only, never on
// the number of workloads or pods: one selector per namespace label name
// the metrics use (the usage metrics and the kube-state-metrics ones share
// it when both say "namespace"), each also for exported_<label> (a
// ServiceMonitor without honorLabels renames the exporter's labels; range
// selectors cannot be joined with `or`, and an empty selector costs the
// server an index lookup), each read over its range piece after piece:
// the oldest 15 minutes first, then pieces sized from the answers so far to
// fit the bounds on an answer, of at most 24 hours (readSelector). A piece
// whose samples the server refuses to load at once (--query.max-samples),
// or whose answer is too long after all, is halved until it fits.
func (p *Source) Usage(ctx context.Context, q usage.Query) (usage.Result, error) {
	if err := metrics.CheckQuery(q); err != nil {
		return usage.Result{}, err
	}
	var namespaces []string
	for _, r := range q.Workloads {
		namespaces = append(namespaces, r.Namespace)
	}
	slices.Sort(namespaces)
	namespaces = slices.Compact(namespaces)

	var ss []metrics.Series
	var warnings []string
	if len(namespaces) > 0 {
		var err error
		ss, warnings, err = p.fetch(ctx, p.selectors(q, namespaces), q.At, q.Lookback)
		if err != nil {
			return usage.Result{}, fmt.Errorf("usage from %s: %w", p.name, err)
		}
		// Whether a pod still runs is judged at the evaluation time
		// alone: its phase is read over the last minutes only, and only
		// the phases that end it, which keeps a series a pod and a week
		// of samples out of the answer.
		phases, more, err := p.fetch(ctx, p.phaseSelectors(q, namespaces), q.At, min(q.Lookback, phaseLookback))
		if err != nil {
			return usage.Result{}, fmt.Errorf("usage from %s: %w", p.name, err)
		}
		ss, warnings = append(ss, phases...), append(warnings, more...)
	}
	res, err := metrics.NewSet(p.name, ss, nil).Usage(ctx, q)
	if err != nil {
		return usage.Result{}, err
	}
	if len(res.Failed) > 0 {
		if err := p.nameHeldValues(ctx, q, &res); err != nil {
			return usage.Result{}, err
		}
	}
	if len(warnings) > 0 {
		// The server says its answer may lack data (a store or a shard
		// did not answer): nothing it covers may be scaled back.
		why := fmt.Sprintf("%s answered with warnings, so its data may be partial: %s", p.name, strings.Join(warnings, "; "))
		for ref, w := range res.Workloads {
			w.Partial = why
			res.Workloads[ref] = w
		}
		res.Warnings = append(res.Warnings, why)
	}
	return res, nil
}

// phaseLookback is how far back a pod's phase is read: well beyond the
// liveness tolerance of kube-state-metrics' usual scrape intervals.
const phaseLookback = 15 * time.Minute

// phaseSelectors returns the selectors of the phases that end a pod, in
// the namespaces, by the label and by its exported_ form.
func (p *Source) phaseSelectors(q usage.Query, namespaces []string) []string {
	var sels []string
	for _, nsLabel := range []string{"namespace", metrics.ExportedPrefix + "namespace"} {
		ms := []string{"__name__=" + quote(metrics.PodPhaseMetric), "phase=~" + quote(strings.Join(metrics.EndedPhases, "|")), nsLabel + "=~" + quote(namespaceRE(namespaces))}
		sels = append(sels, "{"+strings.Join(append(ms, p.matchers(q)...), ", ")+"}")
	}
	return sels
}

// matchers are the label matchers a query's selectors end with: the
// source's own, and the values of the clusters of its workloads when it
// keys series by cluster. One matcher covers every cluster
// (cluster=~"a|b|c"), so that the requests of a run do not grow with
// the number of clusters.
func (p *Source) matchers(q usage.Query) []string {
	var ms []string
	if p.matcher != nil {
		ms = append(ms, p.matcher.String())
	}
	if q.ClusterLabel == "" {
		return ms
	}
	var values []string
	for _, r := range q.Workloads {
		if v, ok := q.ClusterValue(r); ok {
			values = append(values, v)
		}
	}
	slices.Sort(values)
	values = slices.Compact(values)
	switch len(values) {
	case 0:
		// No workload's cluster has a value: its series are none of
		// the store's.
		return append(ms, q.ClusterLabel+"="+quote(""))
	case 1:
		return append(ms, q.ClusterLabel+"="+quote(values[0]))
	}
	for i, v := range values {
		values[i] = regexp.QuoteMeta(v)
	}
	return append(ms, q.ClusterLabel+"=~"+quote(strings.Join(values, "|")))
}

// nameHeldValues says, for the workloads of clusters whose label value
// has no series in the answer, which values the store does hold: one
// request for the label's values over the query's metrics, whatever the
// number of clusters.
func (p *Source) nameHeldValues(ctx context.Context, q usage.Query, res *usage.Result) error {
	if q.ClusterLabel == "" {
		return nil
	}
	var names []string
	for _, mp := range q.Metrics {
		names = append(names, regexp.QuoteMeta(mp.Metric))
	}
	slices.Sort(names)
	ms := []string{"__name__=~" + quote(strings.Join(slices.Compact(names), "|"))}
	if p.matcher != nil {
		ms = append(ms, p.matcher.String())
	}
	held, err := p.LabelValues(ctx, q.ClusterLabel, "{"+strings.Join(ms, ", ")+"}", q.At, q.Lookback)
	if err != nil {
		return fmt.Errorf("usage from %s: %w", p.name, err)
	}
	for ref := range res.Failed {
		if v, ok := q.ClusterValue(ref); ok {
			res.Failed[ref] = metrics.NoSeries(p.name, q.ClusterLabel, v, ref.Cluster, held)
		}
	}
	return nil
}

// namespaceRE matches exactly the namespaces.
func namespaceRE(namespaces []string) string {
	nsRE := make([]string, len(namespaces))
	for i, ns := range namespaces {
		nsRE[i] = regexp.QuoteMeta(ns)
	}
	return strings.Join(nsRE, "|")
}

// selectors returns the series selectors of a query, without a range.
func (p *Source) selectors(q usage.Query, namespaces []string) []string {
	ksm := slices.DeleteFunc(metrics.KubeStateMetrics(), func(n string) bool { return n == metrics.PodPhaseMetric })
	byLabel := map[string][]string{"namespace": ksm}
	for _, mp := range q.Metrics {
		byLabel[mp.NamespaceLabel] = append(byLabel[mp.NamespaceLabel], mp.Metric)
		byLabel[mp.NamespaceLabel] = append(byLabel[mp.NamespaceLabel], mp.Divisors()...)
	}
	var sels []string
	for _, l := range slices.Sorted(maps.Keys(byLabel)) {
		names := byLabel[l]
		slices.Sort(names)
		names = slices.Compact(names)
		for i, n := range names {
			names[i] = regexp.QuoteMeta(n)
		}
		for _, nsLabel := range []string{l, metrics.ExportedPrefix + l} {
			ms := []string{"__name__=~" + quote(strings.Join(names, "|")), nsLabel + "=~" + quote(namespaceRE(namespaces))}
			sels = append(sels, "{"+strings.Join(append(ms, p.matchers(q)...), ", ")+"}")
		}
	}
	return sels
}

// quote writes a PromQL string literal: Go's escapes are PromQL's.
func quote(s string) string { return strconv.Quote(s) }

// selectorRead is the samples of one selector over the whole range of a
// fetch.
type selectorRead struct {
	sel      string
	tbl      *seriesTable
	warnings []string
}

// fetch reads the raw samples of every selector in (at-lookback, at], a
// few selectors at once, each range piece after piece (readSelector),
// and joins the selectors' series.
func (p *Source) fetch(ctx context.Context, sels []string, at time.Time, lookback time.Duration) ([]metrics.Series, []string, error) {
	reads := make([]*selectorRead, len(sels))
	for i, sel := range sels {
		reads[i] = &selectorRead{sel: sel}
	}
	if err := p.readAll(ctx, reads, at, lookback); err != nil {
		return nil, nil, err
	}
	warned := make(map[string]bool)
	tables := make([]*seriesTable, 0, len(reads))
	for _, r := range reads {
		for _, w := range r.warnings {
			warned[w] = true
		}
		tables = append(tables, r.tbl)
		r.tbl = nil
	}
	return join(tables), slices.Sorted(maps.Keys(warned)), nil
}

// readAll reads the selectors, Concurrency at a time, and stops them all
// at the first failure.
func (p *Source) readAll(ctx context.Context, reads []*selectorRead, at time.Time, lookback time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		sem      = make(chan struct{}, p.concurrency)
	)
	for _, r := range reads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			tbl, warns, err := p.readSelector(ctx, r.sel, at, lookback)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				return
			}
			r.tbl, r.warnings = tbl, warns
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// readSelector reads the samples of sel in (at-lookback, at], oldest
// piece first, each answer decoded into one table after the answers
// before it. The first piece is short (firstPiece), so that its answer
// fits the bounds whatever the fleet; each next one is sized from what
// the answers so far held (nextPiece), to about pieceShare of the bounds
// on an answer, and at most chunk: a large fleet is asked for in as many
// pieces as its answers need, without reading answers that turn out too
// long and asking again (those are still halved, should the size change
// on the way). Once the first answer has sized them, each piece is asked
// for while the one before it is read.
func (p *Source) readSelector(ctx context.Context, sel string, at time.Time, lookback time.Duration) (*seriesTable, []string, error) {
	tbl := newSeriesTable()
	if lookback <= 0 {
		return tbl, nil, nil
	}
	var warnings []string
	var sz sizing
	d := min(lookback, firstPiece)
	cur := piece{end: at.Add(-lookback).Add(d), d: d}
	for {
		var next piece
		if cur.end.Before(at) && sz.asked > 0 {
			next.d = min(p.nextPiece(sz), at.Sub(cur.end))
			next.end = cur.end.Add(next.d)
			next.ahead = p.send(ctx, rangeExpr(sel, next.d), next.end)
		}
		n, warns, err := p.readRange(ctx, tbl, sel, cur.end, cur.d, at, cur.ahead)
		if err != nil {
			next.ahead.drop()
			return nil, nil, err
		}
		warnings = append(warnings, warns...)
		sz.add(n, cur.d)
		if !cur.end.Before(at) {
			return tbl, warnings, nil
		}
		if next.ahead == nil {
			next.d = min(p.nextPiece(sz), at.Sub(cur.end))
			next.end = cur.end.Add(next.d)
		}
		cur = next
	}
}

// piece is a range (end-d, end] of a selector, and its first try when it
// was sent ahead.
type piece struct {
	end   time.Time
	d     time.Duration
	ahead *try
}

// rangeExpr is the range selector of sel over d.
func rangeExpr(sel string, d time.Duration) string {
	return sel + "[" + model.Duration(d).String() + "]"
}

// answerSize is the bytes of an answer, decompressed, and of its lists of
// samples: those grow with the range asked for, the rest (each series'
// labels) does not.
type answerSize struct {
	bytes, samples int64
}

// sizing is what the answers for a selector said of its size so far.
type sizing struct {
	samples int64
	asked   time.Duration
	// last is the bytes of samples a nanosecond of range of the last
	// answer, and fixed the bytes of its labels and envelope.
	last  float64
	fixed int64
}

func (s *sizing) add(n answerSize, d time.Duration) {
	s.samples += n.samples
	s.asked += d
	s.fixed = n.bytes - n.samples
	if d > 0 {
		s.last = float64(n.samples) / float64(d)
	}
}

// nextPiece is the range of the next request: about pieceShare of the
// bounds on an answer, less the labels of the last answer (each answer
// repeats them), at the bytes of samples per hour of the answers so far,
// or of the last one when it held more (a fleet that grew along the
// range). The first piece being short, its labels are most of its
// answer: sized by its bytes alone, the next pieces would be a few times
// too short.
func (p *Source) nextPiece(sz sizing) time.Duration {
	target := float64(min(p.transport.maxBody, p.transport.inFlightMax/int64(p.concurrency)))*pieceShare - float64(sz.fixed)
	perNs := sz.last
	if sz.asked > 0 {
		perNs = max(perNs, float64(sz.samples)/float64(sz.asked))
	}
	if perNs <= 0 {
		return chunk
	}
	d := target / perNs
	if d >= float64(chunk) {
		return chunk
	}
	return max(time.Duration(d).Truncate(time.Second), minChunk)
}

// join returns the series of the tables, in time order, one per label
// set: a series that several selectors matched (with both a label and
// its exported_ form) is their samples together.
func join(tables []*seriesTable) []metrics.Series {
	n := 0
	for _, t := range tables {
		n += len(t.list)
	}
	out := make([]metrics.Series, 0, n)
	var seen map[string]int
	var key []byte
	for ti, t := range tables {
		for _, s := range t.list {
			if ti > 0 {
				if seen == nil {
					seen = make(map[string]int)
					for i := range out {
						key = seriesKey(key[:0], out[i])
						seen[string(key)] = i
					}
				}
				key = seriesKey(key[:0], *s)
				if i, ok := seen[string(key)]; ok {
					out[i].Samples = append(slices.Clip(out[i].Samples), s.Samples...)
					continue
				}
				seen[string(key)] = len(out)
			}
			out = append(out, *s)
		}
		t.list = nil
	}
	for i := range out {
		out[i].Samples = fit(inTimeOrder(out[i].Samples))
	}
	slices.SortFunc(out, func(a, b metrics.Series) int {
		return cmp.Or(strings.Compare(a.Metric, b.Metric), slices.CompareFunc(a.Labels, b.Labels, func(x, y metrics.Label) int {
			return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Value, y.Value))
		}))
	})
	return out
}

// seriesKey appends a series' name and labels to b: the same series in
// every chunk has the same key. Names and values are valid UTF-8 (the
// decoder makes them so), so 0xff separates them unambiguously.
func seriesKey(b []byte, s metrics.Series) []byte {
	b = append(b, s.Metric...)
	for _, l := range s.Labels {
		b = append(b, 0xff)
		b = append(b, l.Name...)
		b = append(b, 0xff)
		b = append(b, l.Value...)
	}
	return b
}

// inTimeOrder sorts a series' samples by time and keeps one per instant.
// A sample on a chunk boundary, which both chunks return (Prometheus'
// ranges are closed), is the same sample twice; two different values for
// one instant leave nothing to trust there, and become one invalid (NaN)
// sample, which never lowers anything.
func inTimeOrder(xs []usage.Sample) []usage.Sample {
	// Answers come in time order, one sample an instant: a series that
	// is so is left as it is, not written again sample by sample.
	i := 1
	for i < len(xs) && xs[i-1].T < xs[i].T {
		i++
	}
	if i >= len(xs) {
		return xs
	}
	if !slices.IsSortedFunc(xs, func(a, b usage.Sample) int { return cmp.Compare(a.T, b.T) }) {
		slices.SortStableFunc(xs, func(a, b usage.Sample) int { return cmp.Compare(a.T, b.T) })
	}
	out := xs[:0]
	for _, x := range xs {
		if n := len(out); n > 0 && out[n-1].T == x.T {
			if last := out[n-1].V; last != x.V && !(math.IsNaN(last) && math.IsNaN(x.V)) {
				out[n-1].V = math.NaN()
			}
			continue
		}
		out = append(out, x)
	}
	return out
}

// errTooManySamples is the server refusing to load a request's samples.
var errTooManySamples = errors.New("too many samples for one query")

// readRange reads the samples of sel in (end-d, end] into tbl, halving
// the range while the server finds it too big or its answer is too long,
// the older half first; it returns the bytes of the answers read. ahead,
// when not nil, is the first try of the whole range, sent already.
func (p *Source) readRange(ctx context.Context, tbl *seriesTable, sel string, end time.Time, d time.Duration, until time.Time, ahead *try) (answerSize, []string, error) {
	n, warns, err := p.query(ctx, tbl, rangeExpr(sel, d), end, until, ahead)
	if !errors.Is(err, errTooManySamples) && !errors.Is(err, errBodyTooLong) {
		return n, warns, err
	}
	if d/2 < minChunk {
		if errors.Is(err, errBodyTooLong) {
			return answerSize{}, nil, fmt.Errorf("%w: the answer for %s over %s is too long (%w): narrow the query (--cluster-label, fewer namespaces)", ErrUnavailable, sel, d, err)
		}
		return answerSize{}, nil, fmt.Errorf("%w: the server refuses to load the samples of %s even over %s: raise its --query.max-samples", ErrUnavailable, sel, d)
	}
	half := (d / 2).Truncate(time.Second)
	n1, w1, err := p.readRange(ctx, tbl, sel, end.Add(-half), d-half, until, nil)
	if err != nil {
		return answerSize{}, nil, err
	}
	n2, w2, err := p.readRange(ctx, tbl, sel, end, half, until, nil)
	if err != nil {
		return answerSize{}, nil, err
	}
	// The halves' labels are those of one answer.
	return answerSize{bytes: n2.bytes + n1.samples, samples: n1.samples + n2.samples}, append(w1, w2...), nil
}

// query runs one instant query into tbl, with a few tries when the
// failure may be passing: a 5xx, a 429, a timeout, a connection refused,
// a body cut short. Each try is bounded by the timeout, and the waits
// between them by maxRetryAfter, so that a query ends in bounded time. A
// try reads its whole answer, decoded as it streams in; what a failed one
// put in tbl is taken out, and it is tried again whole. It returns the
// bytes of the answer. ahead, when not nil, is its first try, sent
// already.
func (p *Source) query(ctx context.Context, tbl *seriesTable, expr string, at, until time.Time, ahead *try) (answerSize, []string, error) {
	backoff := firstBackoff
	for n := 1; ; n++ {
		t := ahead
		ahead = nil
		if t == nil {
			t = p.send(ctx, expr, at)
		}
		a, err := t.answer(tbl, until)
		if err == nil {
			return a.size, a.warnings, nil
		}
		note := t.note
		if cerr := ctx.Err(); cerr != nil {
			return answerSize{}, nil, cerr
		}
		if errors.Is(err, errNotMatrix) {
			return answerSize{}, nil, fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		f := p.classify(err, note)
		if f.tooMany {
			return answerSize{}, nil, errTooManySamples
		}
		if f.tooLong != nil {
			return answerSize{}, nil, f.tooLong
		}
		if !f.retry || n == maxTries {
			if f.retry {
				return answerSize{}, nil, fmt.Errorf("%w: %s (%d tries)", ErrUnavailable, f.msg, n)
			}
			return answerSize{}, nil, fmt.Errorf("%w: %s", f.kind, f.msg)
		}
		wait := max(backoff, f.wait)
		backoff *= 2
		p.log.Debug("retrying a Prometheus query", "server", p.name, "error", f.msg, "wait", wait)
		timer := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return answerSize{}, nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// errNotMatrix is an answer of another type than asked for: not retried.
var errNotMatrix = errors.New("not a matrix")

// try is one try of a request, sent in a goroutine of its own so that
// the next piece of a range can be asked for while one is read: the
// server prepares its answer meanwhile.
type try struct {
	note   *responseNote
	cancel context.CancelFunc
	done   chan struct{}
	resp   *http.Response
	err    error
}

// send starts a try of an instant query; its answer is read by answer,
// or it is let go by drop. The try's timeout runs from now.
func (p *Source) send(ctx context.Context, expr string, at time.Time) *try {
	t := &try{note: &responseNote{}, done: make(chan struct{})}
	tctx, cancel := context.WithTimeout(context.WithValue(ctx, noteKey{}, t.note), p.timeout)
	t.cancel = cancel
	go func() {
		defer close(t.done)
		t.resp, t.err = p.ask(tctx, expr, at)
	}()
	return t
}

// answer decodes the try's answer into tbl; what a failed one put there
// is taken out.
func (t *try) answer(tbl *seriesTable, until time.Time) (*answer, error) {
	defer t.cancel()
	<-t.done
	if t.err != nil {
		return nil, t.err
	}
	defer t.resp.Body.Close()
	tbl.mark()
	a, err := readAnswer(t.resp, until.UnixMilli(), tbl)
	if err != nil {
		tbl.undo()
	}
	return a, err
}

// drop lets go of a try whose answer is not wanted; nil is none.
func (t *try) drop() {
	if t == nil {
		return
	}
	t.cancel()
	<-t.done
	if t.resp != nil {
		t.resp.Body.Close()
	}
}

// ask sends one instant query as the client library did: a POST of the
// form, again as a GET when the server refuses the POST (403, 405, 501).
// It returns the response with its body unread.
func (p *Source) ask(ctx context.Context, expr string, at time.Time) (*http.Response, error) {
	form := url.Values{}
	form.Set("query", expr)
	form.Set("time", strconv.FormatFloat(float64(at.Unix())+float64(at.Nanosecond())/1e9, 'f', -1, 64))
	form.Set("timeout", p.timeout.String())
	args := form.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.endpoint, strings.NewReader(args))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	// The transport may then send the POST again on a connection that
	// closed before the answer: a query changes nothing.
	req.Header["Idempotency-Key"] = nil
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusForbidden, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		resp.Body.Close()
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, p.endpoint+"?"+args, nil); err != nil {
			return nil, err
		}
		if resp, err = p.client.Do(req); err != nil {
			return nil, err
		}
	}
	return resp, nil
}

// readAnswer decodes a response as it streams in, and says what it means
// as the client library did: a status other than 2xx, 400 and 422 (those
// Prometheus sends with an error body) is a client or server error
// whatever the body; a body "status":"error" is the server's errorType and
// error; a body that is not the API's JSON is a bad response.
func readAnswer(resp *http.Response, until int64, tbl *seriesTable) (*answer, error) {
	code := resp.StatusCode
	if err := statusError(code); err != nil {
		return nil, err
	}
	if code == http.StatusNoContent {
		return nil, fmt.Errorf("%w: no content", errSyntax)
	}
	a, err := decodeInto(resp.Body, until, tbl)
	switch {
	case errors.Is(err, errSyntax):
		return nil, &v1.Error{Type: v1.ErrBadResponse, Msg: err.Error()}
	case err != nil:
		return nil, err
	case a.status == "error":
		return nil, &v1.Error{Type: v1.ErrorType(a.errorType), Msg: a.errorMsg}
	case apiCode(code) && a.status == "success":
		return nil, &v1.Error{Type: v1.ErrBadResponse, Msg: "inconsistent body for response code"}
	}
	switch a.resultType {
	case "matrix":
		if a.bad != "" {
			return nil, fmt.Errorf("%w: %s", errSyntax, a.bad)
		}
		return a, nil
	case "scalar", "vector", "string":
		return nil, fmt.Errorf("the server answered a %s, %w", a.resultType, errNotMatrix)
	}
	return nil, fmt.Errorf("%w: unexpected result type %q", errSyntax, a.resultType)
}

// failure is a classified query error.
type failure struct {
	msg     string
	retry   bool
	wait    time.Duration
	tooMany bool
	// tooLong is an answer over the size bounds (errBodyTooLong).
	tooLong error
	// kind is the sentinel of a failure that is not retried.
	kind error
}

// classify decides what a failed query means. Its message comes from the
// status and the server's error text, never from the request, which holds
// the URL.
func (p *Source) classify(err error, note *responseNote) failure {
	var apiErr *v1.Error
	if !errors.As(err, &apiErr) {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		if errors.Is(err, errBodyTooLong) {
			return failure{msg: err.Error(), tooLong: err}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return failure{msg: fmt.Sprintf("no answer within %s", p.timeout), retry: true}
		}
		// A connection refused or reset, a body cut short.
		return failure{msg: err.Error(), retry: true}
	}
	msg := strings.TrimSpace(string(apiErr.Type) + ": " + apiErr.Msg)
	switch {
	case note.status == http.StatusTooManyRequests || note.status == http.StatusServiceUnavailable:
		wait, ok := retryAfter(note.retryAfter, time.Now())
		if !ok {
			return failure{msg: fmt.Sprintf("%s, asking to retry after %q: too long a wait", msg, note.retryAfter), kind: ErrUnavailable}
		}
		return failure{msg: msg, retry: true, wait: wait}
	case apiErr.Type == v1.ErrExec && strings.Contains(apiErr.Msg, "too many samples"):
		return failure{msg: msg, tooMany: true}
	case apiErr.Type == v1.ErrServer, apiErr.Type == v1.ErrTimeout, apiErr.Type == v1.ErrBadResponse:
		return failure{msg: msg, retry: true}
	case apiErr.Type == v1.ErrBadData:
		return failure{msg: msg, kind: metrics.ErrBadQuery}
	}
	// 401, 403, 404, an execution error: another try would fail alike.
	return failure{msg: msg, kind: ErrUnavailable}
}

// retryAfter reads a Retry-After header, seconds or an HTTP date; ok is
// false when the wait exceeds maxRetryAfter.
func retryAfter(h string, now time.Time) (time.Duration, bool) {
	if h == "" {
		return 0, true
	}
	var d time.Duration
	if secs, err := strconv.Atoi(strings.TrimSpace(h)); err == nil {
		d = time.Duration(secs) * time.Second
	} else if t, err := http.ParseTime(h); err == nil {
		d = t.Sub(now)
	}
	if d > maxRetryAfter {
		return 0, false
	}
	return max(d, 0), true
}

// Series reads the raw samples of the named metrics in (at−lookback, at],
// whatever their labels (within the source's label matcher): what a
// placement read from kube-state-metrics needs, as a recording holds it.
// Warnings are the server's, for an answer that may be partial.
func (p *Source) Series(ctx context.Context, names []string, at time.Time, lookback time.Duration) ([]metrics.Series, []string, error) {
	if len(names) == 0 {
		return nil, nil, nil
	}
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	slices.Sort(quoted)
	ms := []string{"__name__=~" + quote(strings.Join(slices.Compact(quoted), "|"))}
	if p.matcher != nil {
		ms = append(ms, p.matcher.String())
	}
	ss, warnings, err := p.fetch(ctx, []string{"{" + strings.Join(ms, ", ") + "}"}, at, lookback)
	if err != nil {
		return nil, nil, fmt.Errorf("series from %s: %w", p.name, err)
	}
	return ss, warnings, nil
}

// statusError is the error the client library makes of an answer's status
// before it reads the body: any status but 2xx, 400 and 422 (those
// Prometheus sends with an error body) is a client, server or bad-response
// error whatever the body says; nil lets the body decide.
func statusError(code int) error {
	switch {
	case code/100 == 4 && !apiCode(code):
		return &v1.Error{Type: v1.ErrClient, Msg: fmt.Sprintf("client error: %d", code)}
	case code/100 == 5:
		return &v1.Error{Type: v1.ErrServer, Msg: fmt.Sprintf("server error: %d", code)}
	case code/100 != 2 && !apiCode(code):
		return &v1.Error{Type: v1.ErrBadResponse, Msg: fmt.Sprintf("bad response code %d", code)}
	}
	return nil
}

// apiCode reports whether Prometheus sends code with the API's error body.
func apiCode(code int) bool {
	return code == http.StatusBadRequest || code == http.StatusUnprocessableEntity
}
