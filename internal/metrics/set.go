package metrics

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Label is one label of a series.
type Label struct {
	Name, Value string
}

// Series is one time series: of a recorded file, or of a server's answer.
type Series struct {
	Metric string
	// Labels are sorted by name. They never include the metric name, nor a
	// label with an empty value: as in Prometheus, an empty value is the
	// same as no label, so x{a=""} and x are one series.
	Labels []Label
	// Samples are in strictly increasing time order.
	Samples []usage.Sample
}

// SortLabels sorts by name, as a Series holds its labels; label sets are
// short, so insertion sort wins.
func SortLabels(ls []Label) {
	for i := 1; i < len(ls); i++ {
		for j := i; j > 0 && ls[j].Name < ls[j-1].Name; j-- {
			ls[j], ls[j-1] = ls[j-1], ls[j]
		}
	}
}

// A Set is a set of series by metric name: a whole recording, or what a
// Prometheus server returned for one query. Pod → workload attribution
// and usage are computed from a set alone (Usage), so that both sources
// go through the same code and agree on the same data.
//
// A Set is safe for concurrent use.
type Set struct {
	// name stands for the set in warnings and errors: a file, a server.
	name   string
	series []Series
	// byName indexes series by metric name, in set order.
	byName map[string][]int
	ksm    *ksm

	// mu guards the caches, filled on first use: a backtest asks the same
	// questions of a recording once per simulated hour.
	mu      sync.Mutex
	steps   map[string][]intervalCount
	indexes map[usage.Mapping]*podIndex
	// clusters holds the sets of one cluster's series, by label and
	// value (cluster.go).
	clusters map[string]*Set
}

// NewSet indexes ss; name stands for the set in warnings and errors. The
// set keeps ss, and the answers of Usage share its samples: the caller
// hands them over, and must not change them after.
// intervals, when not nil, counts by length the intervals between
// consecutive samples of a series, per metric: a recording that kept only
// some of its samples (KeepWindow) knows them from all, and they then
// stand for the scrape interval of their metrics instead of what ss holds.
func NewSet(name string, ss []Series, intervals map[string]map[int64]int) *Set {
	set := &Set{
		name:     name,
		series:   ss,
		byName:   make(map[string][]int),
		steps:    make(map[string][]intervalCount),
		indexes:  make(map[usage.Mapping]*podIndex),
		clusters: make(map[string]*Set),
	}
	for i, s := range ss {
		set.byName[s.Metric] = append(set.byName[s.Metric], i)
	}
	set.ksm = set.buildKSM()
	for metric, counts := range intervals {
		h := make([]intervalCount, 0, len(counts))
		for d, n := range counts {
			h = append(h, intervalCount{d: d, n: n})
		}
		slices.SortFunc(h, func(a, b intervalCount) int { return cmp.Compare(a.d, b.d) })
		set.steps[metric] = h
	}
	return set
}

// MetricNames returns which of names have a sample in (at−lookback, at]:
// what a preset asks to know which of an exporter's series the set holds.
func (set *Set) MetricNames(_ context.Context, names []string, at time.Time, lookback time.Duration) ([]string, error) {
	w := usage.WindowEnding(at, lookback)
	var out []string
	for _, name := range names {
		for _, i := range set.byName[name] {
			if len(usage.In(set.series[i].Samples, w)) > 0 {
				out = append(out, name)
				break
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}
