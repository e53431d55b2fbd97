package backtest

import (
	"math"
	"slices"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Change is an allocation taking effect.
type Change struct {
	T     int64 // Unix ms
	Alloc engine.Allocation
}

// Timeline is the allocation of one workload over time: the starting one,
// then every change, in time order; and what delivering it took.
type Timeline struct {
	Changes []Change
	// PullRequestsOpened and PullRequestsUpdated count the reviews asked
	// for: an update is a new value pushed to an open pull request.
	PullRequestsOpened, PullRequestsUpdated int
	// OOMKills are the containers killed for memory (Config.OOMKill).
	OOMKills []OOMKill
}

// At returns the allocation in effect at t.
func (tl *Timeline) At(t int64) engine.Allocation {
	i, _ := slices.BinarySearchFunc(tl.Changes, t, func(c Change, t int64) int {
		switch {
		case c.T <= t:
			return -1
		}
		return 1
	})
	if i == 0 {
		return tl.Changes[0].Alloc
	}
	return tl.Changes[i-1].Alloc
}

// Last is the newest allocation.
func (tl *Timeline) Last() engine.Allocation { return tl.Changes[len(tl.Changes)-1].Alloc }

// State is what a strategy sees at one run of the job.
type State struct {
	// At is the run time, Unix ms.
	At int64
	// Past is the workload's trace up to and including At; nothing later.
	Past *Trace
	// Current is the allocation in effect (merged) at At.
	Current engine.Allocation
	// Allocations is the allocation history up to At, for sources that
	// report usage relative to the allocation.
	Allocations *Timeline
	// OOMKills are the memory kills up to At, oldest first, when the
	// consequence model is on: what a cluster's events would have shown.
	OOMKills []OOMKill
}

// OOMKill is a container killed for exceeding its GPU memory share.
type OOMKill struct {
	T int64 // Unix ms
	// Alloc is the share it exceeded.
	Alloc engine.Allocation
}

// Proposal is a strategy's answer at one run.
type Proposal struct {
	Target engine.Allocation
	// Immediate takes effect at once, whatever the delivery: the oracle's
	// privilege, and VPA Auto's, which evicts the pod to apply it.
	Immediate bool
	// NotLive keeps the proposal off the live fast path even when the
	// delivery has one and usage is urgent: the engine's, when its policy
	// does not set gitops.liveUpsize or its decision is not urgent, as the
	// tool itself would not apply it live.
	NotLive bool
}

// Strategy decides allocations from the past.
type Strategy interface {
	Name() string
	Decide(s State) Proposal
}

// Continuous is a strategy that runs in the cluster, as a controller
// does, rather than at the job's cadence: it decides at every sample.
type Continuous interface {
	EveryStep() bool
}

// Clairvoyant is a strategy that also sees the future; only the oracle is.
type Clairvoyant interface {
	Strategy
	DecideWithFuture(s State, full *Trace) Proposal
}

// Config is how the job runs.
type Config struct {
	// Start is every workload's allocation at the start of its trace.
	Start engine.Allocation
	// Cadence is the interval between runs of the job.
	Cadence time.Duration
	// MergeDelay is how long a pull request waits to be merged.
	MergeDelay time.Duration
	// OOMKill is the consequence model of HAMi-core: a memory breach kills
	// the container, and for Restart after it the workload's usage is held
	// to its share. What a strategy sees is that, not the demand.
	OOMKill bool
	Restart time.Duration
	// Live adds the live fast path to pull requests, for every strategy
	// alike (docs/design.md §7): an upsize proposed while usage is urgent (see
	// Urgent) is applied at once, and its pull request catches Git up.
	Live bool
}

// UrgentWindow is how far back the urgency rule looks: the guide's
// reactive upsize window (examples/quickstart/policies).
const UrgentWindow = 2 * time.Minute

// Urgent is the one urgency rule of the live fast path, the same for every
// strategy so that delivery does not favour one: usage of either metric
// reached the allocation within the last UrgentWindow (or at the newest
// sample, when samples are sparser). It is the guide's reactive upsize
// trigger (thresholdPercent 100, metricsWindow 2m), applied to what any
// strategy could observe.
func Urgent(past *Trace, at int64, cur engine.Allocation) bool {
	from := at - max(UrgentWindow, past.Step).Milliseconds()
	w := usage.Window{From: from, To: at}
	for _, s := range [][]usage.Sample{past.Compute, past.Memory} {
		for _, x := range usage.In(s, w) {
			if x.Valid() && !kai.Above(cur.GPUs, x.V/100) {
				return true
			}
		}
	}
	return false
}

// Simulate replays one trace through one strategy.
func Simulate(tr *Trace, s Strategy, cfg Config) *Timeline {
	if p, ok := s.(Planner); ok {
		// A plan meets the demand where the ceiling allows; where it
		// cannot, the kills count as for anyone.
		tl := p.Plan(tr, cfg)
		obs := newObserver(tr, cfg)
		obs.observe(tr.End(), tl)
		tl.OOMKills = obs.kills
		return tl
	}
	tl := &Timeline{Changes: []Change{{T: tr.Start(), Alloc: cfg.Start}}}
	// pending is the open pull request: its value, and when it merges.
	var pending *Change
	cadence := cfg.Cadence.Milliseconds()
	if c, ok := s.(Continuous); ok && c.EveryStep() {
		cadence = tr.Step.Milliseconds()
	}
	obs := newObserver(tr, cfg)
	for at := tr.Start() + cadence; at <= tr.End(); at += cadence {
		if pending != nil && pending.T <= at {
			tl.Changes = append(tl.Changes, *pending)
			pending = nil
		}
		obs.observe(at, tl)
		cur := tl.Last()
		// The history is capacity-clipped too: a strategy that reslices
		// it past its length gets a panic, not the simulator's next change.
		st := State{At: at, Past: obs.seen.upTo(at), Current: cur, Allocations: &Timeline{Changes: slices.Clip(tl.Changes)},
			OOMKills: slices.Clip(obs.kills)}
		var p Proposal
		if c, ok := s.(Clairvoyant); ok {
			p = c.DecideWithFuture(st, tr)
		} else {
			p = s.Decide(st)
		}
		switch {
		case p.Target == cur:
			// Nothing to change: an open pull request is closed.
			pending = nil
		case p.Immediate:
			tl.Changes = append(tl.Changes, Change{T: at, Alloc: p.Target})
			pending = nil
		case cfg.Live && !p.NotLive && p.Target.GPUs > cur.GPUs && Urgent(st.Past, at, cur):
			// Applied at once; a pull request brings Git up to date.
			tl.Changes = append(tl.Changes, Change{T: at, Alloc: p.Target})
			if pending == nil {
				tl.PullRequestsOpened++
			} else {
				tl.PullRequestsUpdated++
			}
			pending = nil
		case pending != nil:
			// The open pull request is updated; it merges when it would have.
			if pending.Alloc != p.Target {
				tl.PullRequestsUpdated++
			}
			pending.Alloc = p.Target
		default:
			pending = &Change{T: at + cfg.MergeDelay.Milliseconds(), Alloc: p.Target}
			tl.PullRequestsOpened++
		}
	}
	if pending != nil && pending.T <= tr.End() {
		tl.Changes = append(tl.Changes, *pending)
	}
	obs.observe(tr.End(), tl)
	tl.OOMKills = obs.kills
	return tl
}

// observer turns demand into what the cluster shows, sample by sample, as
// the allocation is decided: with OOMKill on, memory beyond the share is
// never seen, because the container is killed when it reaches it.
type observer struct {
	tr   *Trace
	cfg  Config
	seen *Trace
	// next is the index of the first sample not yet observed.
	next         int
	kills        []OOMKill
	restartUntil int64
}

func newObserver(tr *Trace, cfg Config) *observer {
	seen := &Trace{Name: tr.Name, Step: tr.Step,
		Compute: make([]usage.Sample, 0, len(tr.Compute)), Memory: make([]usage.Sample, 0, len(tr.Memory))}
	return &observer{tr: tr, cfg: cfg, seen: seen, restartUntil: math.MinInt64}
}

// observe takes in the samples up to at, served by the allocations of tl.
func (o *observer) observe(at int64, tl *Timeline) {
	for ; o.next < len(o.tr.Compute) && o.tr.Compute[o.next].T <= at; o.next++ {
		c, m := o.tr.Compute[o.next], o.tr.Memory[o.next]
		if o.cfg.OOMKill {
			a := tl.At(c.T - o.tr.dt(o.next)).GPUs
			capped := func(x usage.Sample) usage.Sample {
				if x.Valid() {
					x.V = min(x.V, 100*a)
				}
				return x
			}
			switch {
			case c.T <= o.restartUntil:
				// Restarting: the workload holds at most its share.
				c, m = capped(c), capped(m)
			case m.Valid() && kai.Above(m.V/100, a):
				// HAMi-core refuses the allocation beyond the share: a
				// CUDA out-of-memory error, and the container restarts.
				o.kills = append(o.kills, OOMKill{T: c.T, Alloc: tl.At(c.T - o.tr.dt(o.next))})
				o.restartUntil = c.T + o.cfg.Restart.Milliseconds()
				c, m = capped(c), capped(m)
			}
		}
		o.seen.Compute, o.seen.Memory = append(o.seen.Compute, c), append(o.seen.Memory, m)
	}
}

// dt is the interval sample i stands for.
func (t *Trace) dt(i int) int64 {
	if i == 0 {
		return t.Step.Milliseconds()
	}
	return t.Compute[i].T - t.Compute[i-1].T
}

// upTo returns the trace cut at t, sharing its samples. The slices are
// clipped to their length: usage.In returns a sub-slice whose capacity runs
// to the end of the trace, and s[:len(s)+1] would read the future. Clipped,
// the same reslice panics, so no strategy can look ahead, by mistake or
// otherwise, without holding the whole trace.
func (t *Trace) upTo(at int64) *Trace {
	c := *t
	w := usage.Window{From: math.MinInt64, To: at}
	c.Compute, c.Memory = slices.Clip(usage.In(t.Compute, w)), slices.Clip(usage.In(t.Memory, w))
	return &c
}

// Score is how a strategy did on one or many traces.
type Score struct {
	// AllocatedGPUHours is the integral of the allocation; SlackGPUHours of
	// the allocation left unused (the larger of compute and memory used).
	AllocatedGPUHours, SlackGPUHours float64
	// MemoryBreachMinutes and ComputeBreachMinutes: time with usage above
	// the allocation. Under HAMi-core, a memory breach is a CUDA
	// out-of-memory error; compute beyond the share is contention.
	MemoryBreachMinutes, ComputeBreachMinutes float64
	// OOMKills counts the containers killed for memory (Config.OOMKill).
	OOMKills int
	// MemoryOvershootPercentMinutes is the breach's severity: Σ over
	// breach time of how far demand exceeded the share, in percent of it;
	// MaxMemoryOvershootPercent, the worst sample.
	MemoryOvershootPercentMinutes, MaxMemoryOvershootPercent float64
	// Workloads scored, and how many had any memory breach.
	Workloads, WorkloadsWithMemoryBreach int
	// PullRequestsOpened and PullRequestsUpdated: the reviews asked for.
	PullRequestsOpened, PullRequestsUpdated int
	// Changes applied, and the days they were spread over.
	Changes int
	Days    float64
}

// RelativeSlack is Σ(allocation − usage) / Σ allocation.
func (s Score) RelativeSlack() float64 {
	if s.AllocatedGPUHours == 0 {
		return 0
	}
	return s.SlackGPUHours / s.AllocatedGPUHours
}

// MeanMemoryOvershootPercent is how far over the share memory demand was,
// on average over breach time.
func (s Score) MeanMemoryOvershootPercent() float64 {
	if s.MemoryBreachMinutes == 0 {
		return 0
	}
	return s.MemoryOvershootPercentMinutes / s.MemoryBreachMinutes
}

// PullRequestsPerWorkloadDay counts pull requests opened and updated.
func (s Score) PullRequestsPerWorkloadDay() (opened, updated float64) {
	if s.Days == 0 {
		return 0, 0
	}
	return float64(s.PullRequestsOpened) / s.Days, float64(s.PullRequestsUpdated) / s.Days
}

// ChangesPerWorkloadDay is the churn.
func (s Score) ChangesPerWorkloadDay() float64 {
	if s.Days == 0 {
		return 0
	}
	return float64(s.Changes) / s.Days
}

// Add accumulates another score.
func (s *Score) Add(o Score) {
	s.AllocatedGPUHours += o.AllocatedGPUHours
	s.SlackGPUHours += o.SlackGPUHours
	s.MemoryBreachMinutes += o.MemoryBreachMinutes
	s.ComputeBreachMinutes += o.ComputeBreachMinutes
	s.OOMKills += o.OOMKills
	s.MemoryOvershootPercentMinutes += o.MemoryOvershootPercentMinutes
	s.MaxMemoryOvershootPercent = max(s.MaxMemoryOvershootPercent, o.MaxMemoryOvershootPercent)
	s.Workloads += o.Workloads
	s.WorkloadsWithMemoryBreach += o.WorkloadsWithMemoryBreach
	s.PullRequestsOpened += o.PullRequestsOpened
	s.PullRequestsUpdated += o.PullRequestsUpdated
	s.Changes += o.Changes
	s.Days += o.Days
}

// Evaluate scores a timeline against the usage it served. A sample at T
// stands for the interval since the previous one, (T−dt, T], as a
// Prometheus gauge does, and is served by the allocation in effect when
// that interval began: a change made at T in answer to the sample at T
// does not take credit for it.
func Evaluate(tr *Trace, tl *Timeline) Score {
	var s Score
	s.Workloads = 1
	s.Changes = len(tl.Changes) - 1
	s.OOMKills = len(tl.OOMKills)
	s.PullRequestsOpened, s.PullRequestsUpdated = tl.PullRequestsOpened, tl.PullRequestsUpdated
	for i := range tr.Compute {
		dt := tr.Step.Milliseconds()
		if i > 0 {
			dt = tr.Compute[i].T - tr.Compute[i-1].T
		}
		c, m := tr.Compute[i], tr.Memory[i]
		if !c.Valid() || !m.Valid() {
			continue
		}
		hours := float64(dt) / float64(time.Hour.Milliseconds())
		a := tl.At(c.T - dt).GPUs
		used := max(c.V, m.V) / 100
		s.AllocatedGPUHours += a * hours
		s.SlackGPUHours += max(0, a-used) * hours
		if kai.Above(m.V/100, a) {
			s.MemoryBreachMinutes += hours * 60
			over := 100 * (m.V/100 - a) / a
			s.MemoryOvershootPercentMinutes += over * hours * 60
			s.MaxMemoryOvershootPercent = max(s.MaxMemoryOvershootPercent, over)
		}
		if kai.Above(c.V/100, a) {
			s.ComputeBreachMinutes += hours * 60
		}
	}
	if s.MemoryBreachMinutes > 0 {
		s.WorkloadsWithMemoryBreach = 1
	}
	s.Days = float64(tr.End()-tr.Start()+tr.Step.Milliseconds()) / float64(24*time.Hour.Milliseconds())
	return s
}
