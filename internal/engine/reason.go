package engine

import (
	"cmp"
	"fmt"
	"math"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// reason renders a decision's reason from its cause and evidence. Every
// sentence a reviewer reads about a decision is written here.
func reason(d Decision) string {
	ev := d.Evidence
	if d.Action.Changes() {
		return proposal(ev) + adjustments(ev) + notes(ev)
	}
	var s string
	switch c := d.Cause; {
	case d.Action == Skipped:
		s = ev.Detail
		switch c {
		case CauseOutOfScope:
			s = "out of scope: " + s
		case CausePolicyInvalid, CausePolicyConflict, CauseDuplicated, CauseManifestInvalid, CauseUnmapped:
			s = "left alone: " + s
		}
		return s + notes(ev)
	case c == CauseQueryFailed:
		s = "usage unavailable: " + ev.Detail
	case c == CauseEditRefused && ev.Wanted != nil:
		w := ev.Wanted
		return fmt.Sprintf("no change: the edit was refused (%s); it wanted %s → %s: %s", ev.Detail, w.Current, w.Recommended, w.Reason()) + notes(ev)
	case c.aboutData() && ev.Shortfall != nil:
		s = shortfall(ev.Shortfall)
	case c == CauseFits:
		switch {
		case ev.Baseline != nil && ev.Baseline.Target() >= ev.Allocation:
			s = "usage fits the allocation: " + baselineText(ev.Baseline)
		case ev.Blocker != nil:
			b := ev.Blocker
			s = fmt.Sprintf("%s reached %.0f%% of the allocation in the last %s (a scale-back needs it below %d%%)",
				b.Metric, b.Percent, b.Window, b.ThresholdPercent)
		default:
			s = "no rule asks for a change"
		}
	case c == CauseNoBaseline:
		s = scaleBackSummary(ev) + ", but without a proactive baseline there is no scale-back"
	case c == CauseNotAllowed && (ev.Proposal != nil || ev.Baseline != nil):
		if ev.Proposal != nil && ev.Proposal.Action == Upsize {
			s = proposal(ev) + "; but the strategy does not allow upsizes (enablement.gpu.requests.upsize)"
		} else {
			s = fmt.Sprintf("the %s baseline is below the allocation (%s), but the strategy does not allow downsizes (enablement.gpu.requests.downsize)",
				ev.Baseline.Window, baselineText(ev.Baseline))
		}
	case c == CauseAtBound && ev.Proposal != nil:
		s = proposal(ev) + adjustments(ev)
		switch {
		case ev.Proposal.Action == Upsize && ev.Allocation > ev.Ceiling:
			s += fmt.Sprintf("; the allocation is already above the ceiling %g", ev.Ceiling)
		case ev.Proposal.Action == Upsize:
			s += "; already at the ceiling"
		case ev.Proposal.Target > ev.Ceiling:
			s += fmt.Sprintf("; that is above the ceiling %g, and a scale-back to the ceiling would cut below measured usage", ev.Ceiling)
		default:
			s += fmt.Sprintf("; the floor %g leaves nothing to scale back", ev.Floor)
		}
	case c == CauseBelowMinChange && ev.Proposal != nil:
		s = proposal(ev) + adjustments(ev)
		if a, ok := ev.adjustment(AdjustMinChange); ok {
			s += fmt.Sprintf("; %.2f → %.2f is below the minimum change (%.0f%%)", a.From, a.To, a.Percent)
		} else {
			cur := Allocation{Form: d.Current.Form, GPUs: ev.Allocation}
			s += fmt.Sprintf("; as %s that stays %s", cur.Form, cur)
		}
	default:
		// A decision made outside the math, or one whose evidence was
		// not kept (decoded from JSON): the detail is all there is.
		s = cmp.Or(ev.Detail, string(c))
	}
	return "no change: " + s + notes(ev)
}

// proposal says what the winning rule read and asked for.
func proposal(ev Evidence) string {
	p := ev.Proposal
	switch {
	case p == nil:
		return ""
	case p.Action == Upsize && p.Rule == RuleReactiveUpsize:
		r, _ := ev.upsize(p.Metric)
		return upsize(r, ev.Allocation)
	case p.Action == Upsize:
		s := fmt.Sprintf("%s baseline is above the allocation: %s", ev.Baseline.Window, baselineText(ev.Baseline))
		if p.Urgent && len(ev.Upsizes) > 0 {
			s += "; and now " + upsize(ev.Upsizes[0], ev.Allocation)
		}
		return s
	case p.Rule == RuleReactiveScaleBack:
		var r Reading
		for _, sb := range ev.ScaleBacks {
			if sb.Metric == p.Metric {
				r = sb
			}
		}
		return fmt.Sprintf("%s stayed below %d%% for %s (peak %.0f%%) → %s × %g = %s", r.Metric, r.ThresholdPercent,
			r.Window, r.Percent, num(r.Value), factor(r), num(r.Target)) + "; " + scaleBackSummary(ev)
	default:
		s := fmt.Sprintf("%s baseline %s", ev.Baseline.Window, baselineText(ev.Baseline))
		if len(ev.ScaleBacks) > 0 {
			s += "; " + scaleBackSummary(ev)
		}
		return s
	}
}

func upsize(r Reading, a float64) string {
	s := fmt.Sprintf("%s peaked at %.0f%% of its %.2f allocation over %s (≥ %d%%) → %s × %g = %s",
		r.Metric, r.Percent, a, r.Window, r.ThresholdPercent, num(r.Value), factor(r), num(r.Target))
	if r.MaxPercent > 0 {
		s += fmt.Sprintf(", capped at maxPercent %d%% = %s", r.MaxPercent, num(r.Cap))
	}
	return s
}

// baseline says how the baseline was computed, naming every metric's
// statistic when there are several.
func baselineText(b *Baseline) string {
	r := b.Metrics[b.Decisive]
	what := fmt.Sprintf("%s peaked at", r.Metric)
	if r.Percentile < 100 {
		what = fmt.Sprintf("%s p%d was", r.Metric, r.Percentile)
	}
	if r.DailyPeaks > 0 {
		peaks := "daily peaks"
		if r.DailyPeaks == 1 {
			peaks = "daily peak"
		}
		what = fmt.Sprintf("%s p%d of %d %s was", r.Metric, r.Percentile, r.DailyPeaks, peaks)
	}
	if r.RiskPercent > 0 {
		what = fmt.Sprintf("%s's hourly peak ranked %d of %d (a breach risk of %d%% an hour) was", r.Metric, r.Rank, r.Hours, r.RiskPercent)
	}
	over := r.Window.String()
	if r.History > 0 {
		over = r.History.String() + " of history"
	}
	if r.History > 0 && r.Window != b.Window {
		// Memory read over its own, longer window (memoryWindow).
		over += fmt.Sprintf(" (its window is %s)", r.Window)
	}
	var conf string
	if r.ConfidencePercent > 0 {
		shorter := b.Window
		if r.ConfidenceWindow > 0 {
			shorter = r.ConfidenceWindow
		}
		conf = fmt.Sprintf(" (headroom %d%% + %g%% while the history is shorter than %s)", r.HeadroomPercent, r.ConfidencePercent, shorter)
	}
	s := fmt.Sprintf("%s %s GPU over %s → %s × %g%s = %s", what, num(r.Value), over, num(r.Value), factor(r), conf, num(r.Target))
	if len(b.Metrics) > 1 {
		parts := make([]string, len(b.Metrics))
		for i, m := range b.Metrics {
			stat := "peak"
			if m.Percentile < 100 {
				stat = fmt.Sprintf("p%d", m.Percentile)
			}
			if m.DailyPeaks > 0 {
				stat = fmt.Sprintf("p%d of daily peaks", m.Percentile)
			}
			if m.RiskPercent > 0 {
				stat = fmt.Sprintf("hourly peak (rank %d of %d)", m.Rank, m.Hours)
			}
			parts[i] = fmt.Sprintf("%s %s %s", m.Metric, stat, num(m.Value))
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

func scaleBackSummary(ev Evidence) string {
	parts := make([]string, len(ev.ScaleBacks))
	for i, r := range ev.ScaleBacks {
		parts[i] = fmt.Sprintf("%s stayed below %d%% for %s (peak %.0f%%)", r.Metric, r.ThresholdPercent, r.Window, r.Percent)
	}
	return strings.Join(parts, "; ")
}

// factor is what a reading's value is multiplied by: its headroom, and the
// confidence headroom a short history adds.
func factor(r Reading) float64 {
	// Rounded as it is shown, so that 20% + 71.4% reads 1.914.
	return math.Round((100+float64(r.HeadroomPercent)+r.ConfidencePercent)*10) / 1000
}

// adjustments says what bounds and rounding did to the proposal.
func adjustments(ev Evidence) string {
	var b strings.Builder
	for _, a := range ev.Adjustments {
		switch a.Kind {
		case AdjustStepLimit:
			fmt.Fprintf(&b, "; a step may not exceed %.0f%% of the allocation (%s)", a.Percent, num(a.Limit))
		case AdjustCeiling:
			fmt.Fprintf(&b, "; clamped to the ceiling %g", a.Limit)
		case AdjustFloor:
			fmt.Fprintf(&b, "; raised to the floor %g", a.Limit)
		case AdjustGrid:
			fmt.Fprintf(&b, "; %s in KAI's 0.01 steps", Allocation{Form: Fraction, GPUs: a.To})
		case AdjustForm:
			fmt.Fprintf(&b, "; moves from %s to %s", a.FromForm, a.ToForm)
		}
	}
	return b.String()
}

func notes(ev Evidence) string {
	var b strings.Builder
	for _, n := range ev.Notes {
		fmt.Fprintf(&b, "; left alone: %s: %s", n.Field, n.Why)
	}
	if ev.Shortfall == nil || ev.Shortfall.Kind != ShortUnattributed {
		for _, u := range ev.Unattributed {
			fmt.Fprintf(&b, "; not counted: %s", u)
		}
	}
	return b.String()
}

// shortfall says what the data lacks.
func shortfall(s *Shortfall) string {
	const incomplete = "incomplete data in the window: "
	switch s.Kind {
	case ShortNoData:
		return fmt.Sprintf("no usage data in the last %s", s.Window)
	case ShortNoSamples:
		return fmt.Sprintf(incomplete+"no %s samples in the last %s", s.Metric, s.Window)
	case ShortNoLive:
		return "no usage samples from any running pod"
	case ShortStale:
		return fmt.Sprintf("stale data: the newest sample is %s old", s.Age)
	case ShortTooYoung:
		return fmt.Sprintf("pod too young to judge: %d pod(s), the oldest %s old, below minPodMetricsAge %s", s.Pods, s.Age, s.MinAge)
	case ShortYoungPod:
		return fmt.Sprintf("pod %s is younger than minPodMetricsAge %s: a downsize waits until it can be judged", s.Pod, s.MinAge)
	case ShortHistory:
		return fmt.Sprintf(incomplete+"a downsize needs %s of %s history, and it has %s", s.Need, s.Metric, s.Have)
	case ShortGap:
		return fmt.Sprintf(incomplete+"a downsize needs %s of %s history without gaps, and it has a %s gap", s.Need, s.Metric, s.Gap)
	case ShortNotFresh:
		return fmt.Sprintf(incomplete+"running pod %s has no recent %s sample", s.Pod, s.Metric)
	case ShortFewSamples:
		return fmt.Sprintf(incomplete+"pod %s has %d of %d %s samples in the last %s", s.Pod, s.Samples, s.Expected, s.Metric, s.Window)
	case ShortMixed:
		return "mixed data: " + s.Why
	case ShortPartial:
		return "incomplete data: the usage source's answer may be partial (" + s.Why + "), and a scale-back needs all of it"
	case ShortUnattributed:
		more := ""
		if s.Pods > 1 {
			more = fmt.Sprintf(" (and %d more)", s.Pods-1)
		}
		return "incomplete data: " + s.Why + more + ", and a scale-back needs every pod of the workload"
	case ShortInvalidData:
		return fmt.Sprintf("invalid data in the window: pod %s reported %d NaN, infinite, negative or out-of-range %s sample(s) in the last %s, and a scale-back relies on that window",
			s.Pod, s.Samples, s.Metric, s.Window)
	}
	return string(s.Kind)
}

func (ev Evidence) upsize(m usage.Metric) (Reading, bool) {
	for _, r := range ev.Upsizes {
		if r.Metric == m {
			return r, true
		}
	}
	return Reading{}, false
}

func (ev Evidence) adjustment(k AdjustmentKind) (Adjustment, bool) {
	for _, a := range ev.Adjustments {
		if a.Kind == k {
			return a, true
		}
	}
	return Adjustment{}, false
}
