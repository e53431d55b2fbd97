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
// server an index lookup), each split in 24-hour chunks. A chunk whose
// samples the server refuses to load at once (--query.max-samples) is
// halved until it fits.
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
	}
	res, err := metrics.NewSet(p.name, ss, nil).Usage(ctx, q)
	if err != nil {
		return usage.Result{}, err
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

// selectors returns the series selectors of a query, without a range.
func (p *Source) selectors(q usage.Query, namespaces []string) []string {
	byLabel := map[string][]string{"namespace": metrics.KubeStateMetrics()}
	for _, mp := range q.Metrics {
		byLabel[mp.NamespaceLabel] = append(byLabel[mp.NamespaceLabel], mp.Metric)
		byLabel[mp.NamespaceLabel] = append(byLabel[mp.NamespaceLabel], mp.Divisors()...)
	}
	nsRE := make([]string, len(namespaces))
	for i, ns := range namespaces {
		nsRE[i] = regexp.QuoteMeta(ns)
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
			ms := []string{"__name__=~" + quote(strings.Join(names, "|")), nsLabel + "=~" + quote(strings.Join(nsRE, "|"))}
			if p.matcher != nil {
				ms = append(ms, p.matcher.String())
			}
			sels = append(sels, "{"+strings.Join(ms, ", ")+"}")
		}
	}
	return sels
}

// quote writes a PromQL string literal: Go's escapes are PromQL's.
func quote(s string) string { return strconv.Quote(s) }

// rangeRead is one request: the samples of a selector in (end-d, end].
type rangeRead struct {
	sel      string
	end      time.Time
	d        time.Duration
	matrix   model.Matrix
	warnings v1.Warnings
}

// fetch reads the raw samples of every selector in (at-lookback, at],
// chunk by chunk, a few requests at once, and stitches the chunks into
// series.
func (p *Source) fetch(ctx context.Context, sels []string, at time.Time, lookback time.Duration) ([]metrics.Series, []string, error) {
	var reads []*rangeRead
	for _, sel := range sels {
		for end := at; end.After(at.Add(-lookback)); end = end.Add(-chunk) {
			d := min(chunk, end.Sub(at.Add(-lookback)))
			reads = append(reads, &rangeRead{sel: sel, end: end, d: d})
		}
	}
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
			m, warns, err := p.readRange(ctx, r.sel, r.end, r.d)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				return
			}
			r.matrix, r.warnings = m, warns
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}

	// Oldest chunk first, so that each series is mostly appended to in
	// time order; the samples are put in time order below anyway, since an
	// answer (a proxy, another server) may not be.
	slices.SortStableFunc(reads, func(a, b *rangeRead) int { return a.end.Compare(b.end) })
	bySeries := make(map[string]*metrics.Series)
	warned := make(map[string]bool)
	for _, r := range reads {
		for _, w := range r.warnings {
			warned[w] = true
		}
		for _, st := range r.matrix {
			key := st.Metric.String()
			s, ok := bySeries[key]
			if !ok {
				s = seriesOf(st.Metric)
				bySeries[key] = s
			}
			for _, x := range st.Values {
				s.Samples = append(s.Samples, usage.Sample{T: int64(x.Timestamp), V: float64(x.Value)})
			}
		}
	}
	out := make([]metrics.Series, 0, len(bySeries))
	for _, s := range bySeries {
		s.Samples = inTimeOrder(s.Samples)
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b metrics.Series) int {
		return cmp.Or(strings.Compare(a.Metric, b.Metric), slices.CompareFunc(a.Labels, b.Labels, func(x, y metrics.Label) int {
			return cmp.Or(strings.Compare(x.Name, y.Name), strings.Compare(x.Value, y.Value))
		}))
	})
	return out, slices.Sorted(maps.Keys(warned)), nil
}

// inTimeOrder sorts a series' samples by time and keeps one per instant.
// A sample on a chunk boundary, which both chunks return (Prometheus'
// ranges are closed), is the same sample twice; two different values for
// one instant leave nothing to trust there, and become one invalid (NaN)
// sample, which never lowers anything.
func inTimeOrder(xs []usage.Sample) []usage.Sample {
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

// seriesOf turns a result's label set into a series' name and labels,
// dropping empty values as the recording's parser does.
func seriesOf(m model.Metric) *metrics.Series {
	s := &metrics.Series{Metric: string(m[model.MetricNameLabel])}
	for n, v := range m {
		if n != model.MetricNameLabel && v != "" {
			s.Labels = append(s.Labels, metrics.Label{Name: string(n), Value: string(v)})
		}
	}
	metrics.SortLabels(s.Labels)
	return s
}

// errTooManySamples is the server refusing to load a request's samples.
var errTooManySamples = errors.New("too many samples for one query")

// readRange reads the samples of sel in (end-d, end], halving the range
// while the server finds it too big.
func (p *Source) readRange(ctx context.Context, sel string, end time.Time, d time.Duration) (model.Matrix, v1.Warnings, error) {
	expr := sel + "[" + model.Duration(d).String() + "]"
	m, warns, err := p.query(ctx, expr, end)
	if !errors.Is(err, errTooManySamples) && !errors.Is(err, errBodyTooLong) {
		return m, warns, err
	}
	if d/2 < minChunk {
		if errors.Is(err, errBodyTooLong) {
			return nil, nil, fmt.Errorf("%w: the answer for %s over %s is too long (%w): narrow the query (--cluster-label, fewer namespaces)", ErrUnavailable, sel, d, err)
		}
		return nil, nil, fmt.Errorf("%w: the server refuses to load the samples of %s even over %s: raise its --query.max-samples", ErrUnavailable, sel, d)
	}
	half := (d / 2).Truncate(time.Second)
	newer, w1, err := p.readRange(ctx, sel, end, half)
	if err != nil {
		return nil, nil, err
	}
	older, w2, err := p.readRange(ctx, sel, end.Add(-half), d-half)
	if err != nil {
		return nil, nil, err
	}
	// The caller stitches by series; the older half goes first.
	return append(older, newer...), append(w2, w1...), nil
}

// query runs one instant query, with a few tries when the failure may be
// passing: a 5xx, a 429, a timeout, a connection refused, a body cut
// short. Each try is bounded by the timeout, and the waits between them
// by maxRetryAfter, so that a query ends in bounded time.
func (p *Source) query(ctx context.Context, expr string, at time.Time) (model.Matrix, v1.Warnings, error) {
	backoff := firstBackoff
	for try := 1; ; try++ {
		note := &responseNote{}
		tctx, cancel := context.WithTimeout(context.WithValue(ctx, noteKey{}, note), p.timeout)
		v, warns, err := p.api.Query(tctx, expr, at, v1.WithTimeout(p.timeout))
		cancel()
		if err == nil {
			m, ok := v.(model.Matrix)
			if !ok {
				return nil, nil, fmt.Errorf("%w: the server answered a %s, not a matrix", ErrUnavailable, v.Type())
			}
			return m, warns, nil
		}
		if cerr := ctx.Err(); cerr != nil {
			return nil, nil, cerr
		}
		f := p.classify(err, note)
		if f.tooMany {
			return nil, nil, errTooManySamples
		}
		if f.tooLong != nil {
			return nil, nil, f.tooLong
		}
		if !f.retry || try == maxTries {
			if f.retry {
				return nil, nil, fmt.Errorf("%w: %s (%d tries)", ErrUnavailable, f.msg, try)
			}
			return nil, nil, fmt.Errorf("%w: %s", f.kind, f.msg)
		}
		wait := max(backoff, f.wait)
		backoff *= 2
		p.log.Debug("retrying a Prometheus query", "server", p.name, "error", f.msg, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, ctx.Err()
		case <-t.C:
		}
	}
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
