package metrics

import (
	"sync"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// seriesSet is a set of series by metric name: a whole recording, or what
// a Prometheus server returned for one query. Pod → workload attribution
// and usage are computed from a set alone (answer), so that both sources
// go through the same code and agree on the same data.
//
// A seriesSet is safe for concurrent use.
type seriesSet struct {
	// name stands for the set in warnings and errors: a file, a server.
	name   string
	series []series
	// byName indexes series by metric name, in set order.
	byName map[string][]int
	ksm    *ksm

	// mu guards the caches, filled on first use: a backtest asks the same
	// questions of a recording once per simulated hour.
	mu      sync.Mutex
	steps   map[string][]intervalCount
	indexes map[usage.Mapping]*podIndex
}

func newSeriesSet(name string, ss []series) *seriesSet {
	set := &seriesSet{
		name:    name,
		series:  ss,
		byName:  make(map[string][]int),
		steps:   make(map[string][]intervalCount),
		indexes: make(map[usage.Mapping]*podIndex),
	}
	for i, s := range ss {
		set.byName[s.Metric] = append(set.byName[s.Metric], i)
	}
	set.ksm = set.buildKSM()
	return set
}
