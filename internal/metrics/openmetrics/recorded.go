package openmetrics

import (
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Recorded is a usage source backed by a recorded OpenMetrics file: what a
// backtest replays, and what `promtool tsdb create-blocks-from openmetrics`
// loads into a Prometheus for the same data to be queried live.
//
// A Recorded is safe for concurrent use.
type Recorded struct {
	set *metrics.Set
	// series are the set's, for Series.
	series []metrics.Series
	// span covers every sample of the file, kept or not.
	span           Span
	samples        int
	oldest, newest int64
}

var _ interface {
	Usage(context.Context, usage.Query) (usage.Result, error)
} = (*Recorded)(nil)

// An Option narrows what a recording keeps in memory. Without options,
// everything is kept.
type Option func(*keep)

// keep is what the options say to keep.
type keep struct {
	// metrics holds the metrics whose series are kept; nil keeps all.
	metrics  map[string]bool
	from, to int64 // Unix ms, inclusive
	window   bool
}

// KeepMetrics keeps only the series of the named metrics, and those of
// kube-state-metrics that attribute pods to workloads, so that memory
// grows with what a run reads rather than with the file. Name a ratio's
// divisors too (preset.Preset.MetricsOf does): a query for a metric not kept
// finds it missing from the file. With no names, only kube-state-metrics
// is kept.
func KeepMetrics(names ...string) Option {
	return func(k *keep) {
		if k.metrics == nil {
			k.metrics = make(map[string]bool)
		}
		// Attribution reads these whatever the metrics asked for.
		for _, n := range slices.Concat(names, metrics.KubeStateMetrics()) {
			k.metrics[n] = true
		}
	}
}

// KeepWindow keeps only the samples from `from` to `to`, inclusive, and
// for each kube-state-metrics series the newest sample before `from` that
// is not a staleness marker: who owns a pod at a time, and since when it
// runs, is its newest report, however old. Every sample still counts for the span and the scrape interval, so
// that a run answers as it would from the whole file, for evaluation times
// in the window and lookbacks that end in it.
func KeepWindow(from, to time.Time) Option {
	return func(k *keep) {
		k.from, k.to, k.window = from.UnixMilli(), to.UnixMilli(), true
	}
}

// OpenRecorded reads the recorded file at path, gunzipping it when the
// name ends in ".gz". It reads the file as a stream, so memory is bounded
// by the samples kept (see the options), not by the file's size.
func OpenRecorded(path string, opts ...Option) (*Recorded, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read recorded usage: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("read recorded usage %s: %w", path, err)
		}
		defer z.Close()
		r = z
	}
	return ParseRecorded(r, path, opts...)
}

// ParseRecorded reads a recorded file from r; name stands for it in error
// messages and warnings.
func ParseRecorded(r io.Reader, name string, opts ...Option) (*Recorded, error) {
	p := newParser(name)
	for _, o := range opts {
		o(&p.keep)
	}
	if err := p.parse(r); err != nil {
		return nil, err
	}
	return p.recorded(), nil
}

// recorded turns what the parser kept into a Recorded.
func (p *parser) recorded() *Recorded {
	n := 0
	for i := range p.series.n {
		if p.series.at(i).keep {
			n++
		}
	}
	kept := make([]metrics.Series, 0, n)
	for i := range p.series.n {
		s := p.series.at(i)
		if !s.keep {
			continue
		}
		if s.carry {
			// No sample in the window followed it.
			s.Samples = append(s.Samples, s.carried)
		}
		s.Samples = fit(s.Samples)
		kept = append(kept, s.Series)
	}
	// The scrape interval is read from every sample of the file, as it
	// would be had every sample been kept.
	set := metrics.NewSet(p.file, kept, p.flushIntervals())
	r := &Recorded{set: set, series: kept, samples: p.times.n, oldest: p.times.min, newest: p.times.max}
	r.span = p.times.span(p.lineOf, p.series.n)
	return r
}

// Oldest returns the time of the oldest sample in the file, or the zero
// time when the file holds none.
func (r *Recorded) Oldest() time.Time {
	if r.samples == 0 {
		return time.Time{}
	}
	return time.UnixMilli(r.oldest).UTC()
}

// Newest returns the time of the newest sample in the file, the natural
// evaluation time of a recording, or the zero time when it holds none.
func (r *Recorded) Newest() time.Time {
	if r.samples == 0 {
		return time.Time{}
	}
	return time.UnixMilli(r.newest).UTC()
}

// Series returns every series kept of the file, sorted by metric name and
// then label set. The result is a copy.
func (r *Recorded) Series() []metrics.Series {
	out := make([]metrics.Series, len(r.series))
	for i, s := range r.series {
		out[i] = metrics.Series{Metric: s.Metric, Labels: slices.Clone(s.Labels), Samples: slices.Clone(s.Samples)}
	}
	slices.SortFunc(out, func(a, b metrics.Series) int {
		if c := strings.Compare(a.Metric, b.Metric); c != 0 {
			return c
		}
		return slices.CompareFunc(a.Labels, b.Labels, func(x, y metrics.Label) int {
			if c := strings.Compare(x.Name, y.Name); c != 0 {
				return c
			}
			return strings.Compare(x.Value, y.Value)
		})
	})
	return out
}

// Usage answers q from the recording. It never returns a sample after
// q.At, so that a backtest replaying the file sees only the past.
func (r *Recorded) Usage(ctx context.Context, q usage.Query) (usage.Result, error) {
	return r.set.Usage(ctx, q)
}

// MetricNames returns which of names the recording has samples of in
// (at−lookback, at], of those it kept.
func (r *Recorded) MetricNames(ctx context.Context, names []string, at time.Time, lookback time.Duration) ([]string, error) {
	return r.set.MetricNames(ctx, names, at, lookback)
}
