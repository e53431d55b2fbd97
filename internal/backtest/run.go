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
	Name     string
	Score    Score
	Timeline *Timeline
}

// Run replays every trace through every strategy, in parallel across
// traces, and returns the results in strategy order.
func Run(ctx context.Context, traces []*Trace, strategies []Strategy, cfg Config) ([]Result, error) {
	results := make([]Result, len(strategies))
	for i, s := range strategies {
		results[i] = Result{Strategy: s.Name(), Workloads: make([]WorkloadScore, len(traces))}
	}
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ti := range jobs {
				tr := traces[ti]
				for si, s := range strategies {
					tl := Simulate(tr, s, cfg)
					results[si].Workloads[ti] = WorkloadScore{Name: tr.Name, Score: Evaluate(tr, tl), Timeline: tl}
				}
			}
		}()
	}
	var err error
	for ti := range traces {
		if err = ctx.Err(); err != nil {
			break
		}
		jobs <- ti
	}
	close(jobs)
	wg.Wait()
	if err != nil {
		return nil, err
	}
	for i := range results {
		for _, w := range results[i].Workloads {
			results[i].Total.Add(w.Score)
		}
	}
	return results, nil
}
