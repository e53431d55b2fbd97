package engine

import (
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Evidence is what a decision rests on: the readings of usage each rule
// made, the proposal that won, every adjustment made to it, and, when
// nothing changes, what stood in the way. Amounts are in GPUs.
type Evidence struct {
	// Allocation is the current allocation the percentages refer to.
	Allocation float64 `json:"allocation,omitempty"`
	// Ceiling and Floor are the strategy's bounds.
	Ceiling float64 `json:"ceiling,omitempty"`
	Floor   float64 `json:"floor,omitempty"`
	// Upsizes are the reactive upsize rules that fired, in metric order.
	Upsizes []Reading `json:"upsizes,omitempty"`
	// Baseline is the proactive baseline, when a proactive policy governs.
	Baseline *Baseline `json:"baseline,omitempty"`
	// ScaleBacks are the reactive scale-back rules, in metric order, when
	// every one of them allowed a scale-back; Blocker is the one that did
	// not.
	ScaleBacks []Reading `json:"scaleBacks,omitempty"`
	Blocker    *Reading  `json:"blocker,omitempty"`
	// Proposal is the target the rules asked for, before adjustments.
	Proposal *Proposal `json:"proposal,omitempty"`
	// Adjustments are what was done to the proposal, in order.
	Adjustments []Adjustment `json:"adjustments,omitempty"`
	// Shortfall says what is wrong with the data, for causes about data.
	Shortfall *Shortfall `json:"shortfall,omitempty"`
	// Detail completes the reason of a decision made outside the math
	// (out of scope, a failed query, a refused edit).
	Detail string `json:"detail,omitempty"`
	// Wanted is the change a refused edit would have made.
	Wanted *Decision `json:"-"`
	// Notes are what the edit left alone on purpose.
	Notes []Note `json:"notes,omitempty"`
	// Unattributed are the pods that may be the workload's but count for
	// no workload, their owner not established (usage.Workload's).
	Unattributed []string `json:"unattributed,omitempty"`
}

// Reading is one rule's reading of one metric over its window.
type Reading struct {
	Metric usage.Metric `json:"metric"`
	Window Span         `json:"window"`
	// Percentile is the statistic read: 100 is the peak.
	Percentile int `json:"percentile"`
	// DailyPeaks, when set, is how many daily peaks Percentile was taken
	// of (the proactive policy's memoryDailyPeakPercentile), in place of
	// the window's samples; Pod and Typical are then those of that day.
	DailyPeaks int `json:"dailyPeaks,omitempty"`
	// RiskPercent, when set, is the breach risk an hour the value was
	// read for (the proactive policy's breachRiskPercent): the peak of the
	// hour ranked Rank from the lowest of the window's Hours hours; Pod
	// and Typical are then those of that hour. No headroom is added.
	RiskPercent int `json:"riskPercent,omitempty"`
	Hours       int `json:"hours,omitempty"`
	Rank        int `json:"rank,omitempty"`
	// Value is the statistic of the hottest pod, and Percent the same as
	// a percentage of the allocation.
	Value   float64 `json:"value"`
	Percent float64 `json:"percent"`
	// Typical is the median of the same pod over the window.
	Typical float64 `json:"typical"`
	// Pod is the hottest pod.
	Pod string `json:"pod"`
	// ThresholdPercent is the rule's threshold, 0 for the baseline.
	ThresholdPercent int `json:"thresholdPercent,omitempty"`
	HeadroomPercent  int `json:"headroomPercent"`
	// ConfidencePercent is the headroom added to memory's because its
	// history is shorter than the baseline's window (the proactive
	// policy's memoryConfidenceHeadroomPercent), on top of HeadroomPercent.
	ConfidencePercent float64 `json:"confidencePercent,omitempty"`
	// ConfidenceWindow is the history over which that headroom shrinks,
	// when the policy's memoryConfidenceWindow sets one shorter than the
	// baseline's window.
	ConfidenceWindow Span `json:"confidenceWindow,omitempty"`
	// Target is Value × (1 + headroom + confidence), before MaxPercent's cap.
	Target float64 `json:"target"`
	// MaxPercent and Cap are set when the target was capped at
	// MaxPercent of the allocation.
	MaxPercent int     `json:"maxPercent,omitempty"`
	Cap        float64 `json:"cap,omitempty"`
	// History is how much of the window held samples, when less than all
	// of it.
	History Span `json:"history,omitempty"`
}

// Capped is the reading's target after its cap.
func (r Reading) Capped() float64 {
	if r.MaxPercent > 0 {
		return r.Cap
	}
	return r.Target
}

// Baseline is the proactive policy's long-term target.
type Baseline struct {
	Window Span `json:"window"`
	// Metrics are the readings of each metric that had samples; Decisive
	// is the index of the one whose target is the baseline's.
	Metrics  []Reading `json:"metrics"`
	Decisive int       `json:"decisive"`
}

// Target is the baseline's target.
func (b *Baseline) Target() float64 { return b.Metrics[b.Decisive].Target }

// Rule names a rule of docs/design.md §4.
type Rule string

const (
	RuleReactiveUpsize    Rule = "reactive upsize"
	RuleBaseline          Rule = "proactive baseline"
	RuleReactiveScaleBack Rule = "reactive scale-back"
	RuleScaleBackBaseline Rule = "scale-back to baseline"
)

// Proposal is the winning rule's target.
type Proposal struct {
	// Action is Upsize or ScaleBack: what the proposal would do.
	Action Action `json:"action"`
	Rule   Rule   `json:"rule"`
	// Metric is the metric of a reactive rule.
	Metric usage.Metric `json:"metric,omitempty"`
	Target float64      `json:"target"`
	Urgent bool         `json:"urgent,omitempty"`
}

func (p Proposal) String() string {
	if p.Metric != "" {
		return string(p.Rule) + " (" + string(p.Metric) + ")"
	}
	return string(p.Rule)
}

// AdjustmentKind names what an adjustment did.
type AdjustmentKind string

const (
	// AdjustStepLimit: an upsize cut to the tightest maxPercent.
	AdjustStepLimit AdjustmentKind = "step-limit"
	AdjustCeiling   AdjustmentKind = "ceiling"
	AdjustFloor     AdjustmentKind = "floor"
	// AdjustGrid: rounded up to KAI's 0.01 steps.
	AdjustGrid AdjustmentKind = "grid"
	// AdjustForm: the request moves between gpu-fraction and whole GPUs.
	AdjustForm AdjustmentKind = "form"
	// AdjustMinChange: the change was dropped as below the minimum.
	AdjustMinChange AdjustmentKind = "min-change"
)

// Adjustment is one bound or rounding applied to a proposal.
type Adjustment struct {
	Kind AdjustmentKind `json:"kind"`
	From float64        `json:"from"`
	To   float64        `json:"to"`
	// Limit is the bound applied (the step limit, ceiling or floor).
	Limit float64 `json:"limit,omitempty"`
	// Percent is the step limit's or the minimum change's percentage.
	Percent float64 `json:"percent,omitempty"`
	// FromForm and ToForm are set by AdjustForm.
	FromForm Form `json:"fromForm,omitempty"`
	ToForm   Form `json:"toForm,omitempty"`
}

// ShortfallKind names what is wrong with the data.
type ShortfallKind string

const (
	ShortNoData      ShortfallKind = "no-data"
	ShortNoSamples   ShortfallKind = "no-samples"
	ShortNoLive      ShortfallKind = "no-live-samples"
	ShortStale       ShortfallKind = "stale"
	ShortTooYoung    ShortfallKind = "too-young"
	ShortYoungPod    ShortfallKind = "young-pod"
	ShortHistory     ShortfallKind = "short-history"
	ShortGap         ShortfallKind = "gap"
	ShortNotFresh    ShortfallKind = "not-fresh"
	ShortFewSamples  ShortfallKind = "few-samples"
	ShortInvalidData ShortfallKind = "invalid-samples"
	// ShortMixed is a pod whose series mix readings of one thing that the
	// query cannot tell apart.
	ShortMixed ShortfallKind = "mixed"
	// ShortPartial is an answer the source itself says may lack data.
	ShortPartial ShortfallKind = "partial"
	// ShortUnattributed is a pod that may be the workload's and counts
	// for no workload: its data may be the high one.
	ShortUnattributed ShortfallKind = "unattributed"
)

// Shortfall is what the data lacks; which fields are set depends on Kind.
type Shortfall struct {
	Kind   ShortfallKind `json:"kind"`
	Metric usage.Metric  `json:"metric,omitempty"`
	Pod    string        `json:"pod,omitempty"`
	// Window is the window looked at; Need the history a downsize needs,
	// Have the history there is; Gap the longest gap; Age a sample's or a
	// pod's age; MinAge the policy's minPodMetricsAge.
	Window Span `json:"window,omitempty"`
	Need   Span `json:"need,omitempty"`
	Have   Span `json:"have,omitempty"`
	Gap    Span `json:"gap,omitempty"`
	Age    Span `json:"age,omitempty"`
	MinAge Span `json:"minAge,omitempty"`
	// Pods, Samples and Expected count pods and samples.
	Pods     int `json:"pods,omitempty"`
	Samples  int `json:"samples,omitempty"`
	Expected int `json:"expected,omitempty"`
	// At is the time of the newest invalid sample, Unix ms.
	At int64 `json:"at,omitempty"`
	// Why is the source's own word on a partial answer, or why a pod
	// counts for no workload.
	Why string `json:"why,omitempty"`
}

// Note is a field the edit left alone on purpose.
type Note struct {
	Field string `json:"field"`
	Why   string `json:"why"`
}

// Span is a duration that renders as policies write durations (2m, 7d).
type Span time.Duration

func (s Span) String() string { return FormatDuration(time.Duration(s)) }

// MarshalText renders the span as policies write durations.
func (s Span) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// Longest is the longest window the decision read (memory may be read
// over a longer one than compute), and 0 when it read none: a pull
// request draws its usage over it.
func (ev Evidence) Longest() time.Duration {
	var window time.Duration
	for _, r := range ev.Upsizes {
		window = max(window, time.Duration(r.Window))
	}
	if ev.Baseline != nil {
		window = max(window, time.Duration(ev.Baseline.Window))
		for _, r := range ev.Baseline.Metrics {
			window = max(window, time.Duration(r.Window))
		}
	}
	return window
}
