package backtest

import (
	"math"
	"slices"
	"strings"
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
	// Evictions are the times a pod was deleted to apply a change
	// (Proposal.Evict), each a restart.
	Evictions []int64
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
	// Restart is how long a killed container took to restart: when its
	// next run started, as its status would show.
	Restart time.Duration
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
	// Evict applies an Immediate proposal by deleting the pod, as VPA's
	// updater does: it restarts (Config.Restart) where a rolled
	// Deployment would not stop serving.
	Evict bool
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
	// Cadence is the job's schedule: it runs on the clock, as a CronJob
	// does, at every multiple of Cadence (FirstRun), for every workload at
	// once.
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
	// LiveMaxChanges caps the live changes of one run, over all workloads,
	// as the tool's --live-max-changes does (internal/live, Applier.Apply):
	// the tool tries its urgent upsizes in the plan's order (namespace,
	// kind, name; here the trace's name) and the ones past the cap wait
	// for their pull request. 0 leaves the fast path uncapped; the tool
	// has no such setting (its 0 turns the fast path off, which is Live
	// false here).
	LiveMaxChanges int
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

// FirstRun is the first run of a job scheduled every cadence that sees the
// trace: the first multiple of cadence after its first sample, in Unix ms.
func FirstRun(tr *Trace, cadence time.Duration) int64 {
	c := cadence.Milliseconds()
	return (floorDiv(tr.Start(), c) + 1) * c
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Simulate replays one trace through one strategy.
func Simulate(tr *Trace, s Strategy, cfg Config) *Timeline {
	return SimulateAll([]*Trace{tr}, s, cfg)[0]
}

// SimulateAll replays every trace through one strategy, as one job runs
// for all of them: at each run every workload is decided, and the live
// changes of that run are capped over all of them (Config.LiveMaxChanges).
// The timelines are in the order of traces.
func SimulateAll(traces []*Trace, s Strategy, cfg Config) []*Timeline {
	out := make([]*Timeline, len(traces))
	if p, ok := s.(Planner); ok {
		for i, tr := range traces {
			// A plan meets the demand where the ceiling allows; where it
			// cannot, the kills count as for anyone.
			tl := p.Plan(tr, cfg)
			obs := newObserver(tr, cfg)
			obs.observe(tr.End(), tl)
			tl.OOMKills = obs.kills
			out[i] = tl
		}
		return out
	}
	if c, ok := s.(Continuous); ok && c.EveryStep() {
		// A controller decides at every sample of its own workload, and
		// applies at once: no job, and so no cap, is involved.
		for i, tr := range traces {
			m := newSim(tr, s, cfg)
			for at := tr.Start() + tr.Step.Milliseconds(); at <= tr.End(); at += tr.Step.Milliseconds() {
				p, urgent := m.propose(at)
				m.apply(at, p, urgent)
			}
			out[i] = m.finish()
		}
		return out
	}
	// The plan's order, which the cap follows.
	order := make([]int, len(traces))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(traces[a].Name, traces[b].Name) })
	sims := make([]*sim, len(traces))
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	for i, tr := range traces {
		sims[i] = newSim(tr, s, cfg)
		first, last = min(first, FirstRun(tr, cfg.Cadence)), max(last, tr.End())
	}
	cadence := cfg.Cadence.Milliseconds()
	proposals := make([]Proposal, len(traces))
	urgent := make([]bool, len(traces))
	for at := first; at <= last; at += cadence {
		for _, i := range order {
			if tr := traces[i]; at > tr.Start() && at <= tr.End() {
				proposals[i], urgent[i] = sims[i].propose(at)
			}
		}
		granted := 0
		for _, i := range order {
			if tr := traces[i]; at <= tr.Start() || at > tr.End() {
				continue
			}
			live := urgent[i] && (cfg.LiveMaxChanges == 0 || granted < cfg.LiveMaxChanges)
			if live {
				granted++
			}
			sims[i].apply(at, proposals[i], live)
		}
	}
	for i := range sims {
		out[i] = sims[i].finish()
	}
	return out
}

// sim is one workload's replay under one strategy.
type sim struct {
	tr  *Trace
	s   Strategy
	cfg Config
	tl  *Timeline
	// pending is the open pull request: its value, and when it merges.
	pending *Change
	obs     *observer
	// future is the clairvoyant's copy of the trace, so that not even it
	// can write into the demand the timeline is scored against.
	future *Trace
}

func newSim(tr *Trace, s Strategy, cfg Config) *sim {
	m := &sim{tr: tr, s: s, cfg: cfg, tl: &Timeline{Changes: []Change{{T: tr.Start(), Alloc: cfg.Start}}}, obs: newObserver(tr, cfg)}
	if _, ok := s.(Clairvoyant); ok {
		m.future = tr.clone(math.MaxInt64)
	}
	return m
}

// propose merges what is due, observes the samples up to at, and asks the
// strategy; urgent says whether the proposal may take the live fast path.
func (m *sim) propose(at int64) (p Proposal, urgent bool) {
	if m.pending != nil && m.pending.T <= at {
		m.tl.Changes = append(m.tl.Changes, *m.pending)
		m.pending = nil
	}
	m.obs.observe(at, m.tl)
	cur := m.tl.Last()
	// Everything the strategy gets is its own copy, clipped to its
	// length: writing into it cannot change the timeline being scored or
	// what the simulator sees, and reslicing past it panics rather than
	// reading the next change or the next sample.
	st := State{At: at, Past: m.obs.seen.clone(at), Current: cur,
		Allocations: &Timeline{Changes: slices.Clip(slices.Clone(m.tl.Changes))},
		OOMKills:    slices.Clip(slices.Clone(m.obs.kills)), Restart: m.cfg.Restart}
	if c, ok := m.s.(Clairvoyant); ok {
		p = c.DecideWithFuture(st, m.future)
	} else {
		p = m.s.Decide(st)
	}
	urgent = m.cfg.Live && !p.Immediate && !p.NotLive && p.Target.GPUs > cur.GPUs && Urgent(m.obs.seen.upTo(at), at, cur)
	return p, urgent
}

// apply delivers the proposal made at at: live when the run grants it.
func (m *sim) apply(at int64, p Proposal, live bool) {
	cur := m.tl.Last()
	switch {
	case p.Target == cur:
		// Nothing to change: an open pull request is closed.
		m.pending = nil
	case p.Immediate:
		m.tl.Changes = append(m.tl.Changes, Change{T: at, Alloc: p.Target})
		m.pending = nil
		if p.Evict {
			m.tl.Evictions = append(m.tl.Evictions, at)
			m.obs.restartUntil = max(m.obs.restartUntil, at+m.cfg.Restart.Milliseconds())
		}
	case live:
		// Applied at once; a pull request brings Git up to date.
		m.tl.Changes = append(m.tl.Changes, Change{T: at, Alloc: p.Target})
		if m.pending == nil {
			m.tl.PullRequestsOpened++
		} else {
			m.tl.PullRequestsUpdated++
		}
		m.pending = nil
	case m.pending != nil:
		// The open pull request is updated; it merges when it would have.
		if m.pending.Alloc != p.Target {
			m.tl.PullRequestsUpdated++
		}
		m.pending.Alloc = p.Target
	default:
		m.pending = &Change{T: at + m.cfg.MergeDelay.Milliseconds(), Alloc: p.Target}
		m.tl.PullRequestsOpened++
	}
}

// finish merges what is due by the end of the trace and returns the
// timeline with its kills.
func (m *sim) finish() *Timeline {
	if m.pending != nil && m.pending.T <= m.tr.End() {
		m.tl.Changes = append(m.tl.Changes, *m.pending)
	}
	m.obs.observe(m.tr.End(), m.tl)
	m.tl.OOMKills = m.obs.kills
	return m.tl
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

// clone returns a copy of the trace cut at t, clipped to its length.
func (t *Trace) clone(at int64) *Trace {
	c := t.upTo(at)
	c.Compute, c.Memory = slices.Clip(slices.Clone(c.Compute)), slices.Clip(slices.Clone(c.Memory))
	return c
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
	// OOMKills counts the containers killed for memory (Config.OOMKill);
	// Evictions, the pods deleted to apply a change. Each is a restart.
	OOMKills, Evictions int
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
	s.Evictions += o.Evictions
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
	s := EvaluateWindow(tr, tl, usage.Window{From: math.MinInt64, To: math.MaxInt64})
	s.PullRequestsOpened, s.PullRequestsUpdated = tl.PullRequestsOpened, tl.PullRequestsUpdated
	s.Days = float64(tr.End()-tr.Start()+tr.Step.Milliseconds()) / float64(24*time.Hour.Milliseconds())
	return s
}

// EvaluateWindow scores the samples, changes, kills and evictions inside
// w alone, for a split in time; pull requests and days are left out.
func EvaluateWindow(tr *Trace, tl *Timeline, w usage.Window) Score {
	var s Score
	s.Workloads = 1
	for _, c := range tl.Changes[1:] {
		if w.Contains(c.T) {
			s.Changes++
		}
	}
	for _, k := range tl.OOMKills {
		if w.Contains(k.T) {
			s.OOMKills++
		}
	}
	for _, e := range tl.Evictions {
		if w.Contains(e) {
			s.Evictions++
		}
	}
	for i := range tr.Compute {
		c, m := tr.Compute[i], tr.Memory[i]
		if !c.Valid() || !m.Valid() || !w.Contains(c.T) {
			continue
		}
		dt := tr.dt(i)
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
	return s
}
