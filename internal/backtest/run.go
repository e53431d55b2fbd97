package backtest

import (
	"context"
	"runtime"
	"sync"
)

// Result is one strategy's outcome over every trace.
type Result struct {
	Strategy string
	Total    Score
	// Workloads holds each trace's score, in trace order.
	Workloads []WorkloadScore
}

// WorkloadScore is one trace's score and allocation history.
type WorkloadScore struct {
	// Name is the trace's, cluster/ first when it names its cluster.
	Name     string
	Cluster  string
	Score    Score
	Timeline *Timeline
}

// Run replays every trace through every strategy, in parallel across
// strategies (a strategy's workloads are replayed together, as one job
// runs them: SimulateAll), and returns the results in strategy order.
func Run(ctx context.Context, traces []*Trace, strategies []Strategy, cfg Config) ([]Result, error) {
	results := make([]Result, len(strategies))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for si := range jobs {
				s := strategies[si]
				r := Result{Strategy: s.Name(), Workloads: make([]WorkloadScore, len(traces))}
				for ti, tl := range SimulateAll(traces, s, cfg) {
					tr := traces[ti]
					r.Workloads[ti] = WorkloadScore{Name: tr.Name, Cluster: tr.Cluster, Score: Evaluate(tr, tl), Timeline: tl}
					r.Total.Add(r.Workloads[ti].Score)
				}
				results[si] = r
			}
		}()
	}
	var err error
	for si := range strategies {
		if err = ctx.Err(); err != nil {
			break
		}
		jobs <- si
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return results, nil
}
