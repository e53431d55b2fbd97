package backtest

import "time"

// CeilingAt is a bound, not a strategy anyone would run: every workload
// keeps the starting allocation until After past the job's schedule slot
// before its trace starts (the start itself when the trace starts at a
// run; see FirstRun), then holds the ceiling to the end. Whatever a strategy decides, a change
// that lands at After cannot serve the demand before it, so the breaches
// CeilingAt still has are the least any strategy delivered no sooner can
// have. It is a Planner, so Simulate and Evaluate score it with the same
// consequence model as every strategy.
type CeilingAt struct {
	Bounds Bounds
	After  time.Duration
	// Label names the moment After stands for (e.g. "second-run").
	Label string
}

// SecondRun is when the job runs for the second time: the first run at
// which a breach after the first run can have been seen, and so the
// earliest the live fast path can answer one.
func SecondRun(cfg Config) time.Duration { return 2 * cfg.Cadence }

// FirstMerge is the earliest any pull request can merge: one opened at the
// first run, merged after the merge delay.
func FirstMerge(cfg Config) time.Duration { return cfg.Cadence + cfg.MergeDelay }

func (c CeilingAt) Name() string {
	if c.Label != "" {
		return "ceiling-at-" + c.Label
	}
	return "ceiling-after-" + c.After.String()
}

// Decide is never called: Simulate asks a Planner for its plan.
func (c CeilingAt) Decide(s State) Proposal { return Proposal{Target: s.Current} }

// Plan is the starting allocation, then the ceiling from After on.
func (c CeilingAt) Plan(tr *Trace, cfg Config) *Timeline {
	tl := &Timeline{Changes: []Change{{T: tr.Start(), Alloc: cfg.Start}}}
	b := c.Bounds
	b.MinChangePercent = 0
	at := max(tr.Start(), FirstRun(tr, cfg.Cadence)-cfg.Cadence.Milliseconds()+c.After.Milliseconds())
	if a := b.Apply(cfg.Start, b.Ceiling); a != cfg.Start && at <= tr.End() {
		tl.Changes = append(tl.Changes, Change{T: at, Alloc: a})
	}
	return tl
}

var _ Planner = CeilingAt{}
