package engine_test

import (
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/engine"
)

// TestCauseConclusive: the pull-request lifecycle closes a pull request
// only on a judgement made on good data; every cause is classified on
// purpose.
func TestCauseConclusive(t *testing.T) {
	tests := []struct {
		cause      engine.Cause
		conclusive bool
	}{
		{engine.CauseFits, true},
		{engine.CauseNoBaseline, true},
		{engine.CauseAtBound, true},
		{engine.CauseBelowMinChange, true},
		{engine.CauseNotAllowed, true},
		{engine.CauseOutOfScope, true},
		{engine.CauseDataIncomplete, false},
		{engine.CauseDataInvalid, false},
		{engine.CauseDataStale, false},
		{engine.CauseTooYoung, false},
		{engine.CauseQueryFailed, false},
		{engine.CauseEditRefused, false},
		{engine.CauseDuplicated, false},
		{engine.CausePolicyInvalid, false},
		{engine.CausePolicyConflict, false},
		{engine.CauseUnsupported, false},
		{engine.CauseManifestInvalid, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.cause), func(t *testing.T) {
			if got := tt.cause.Conclusive(); got != tt.conclusive {
				t.Errorf("%s.Conclusive() = %v, want %v", tt.cause, got, tt.conclusive)
			}
		})
	}
}

// TestNoUpsizeNeeded: data that blocks only a downsize still rules out an
// upsize; data missing altogether rules out nothing.
func TestNoUpsizeNeeded(t *testing.T) {
	alloc := engine.Allocation{Form: engine.Fraction, GPUs: 0.5}
	none := func(c engine.Cause, k engine.ShortfallKind) engine.Decision {
		d := engine.Unjudged(alloc, c, "")
		if k != "" {
			d.Evidence.Shortfall = &engine.Shortfall{Kind: k}
		}
		return d
	}
	tests := []struct {
		name string
		d    engine.Decision
		want bool
	}{
		{name: "fits", d: none(engine.CauseFits, ""), want: true},
		{name: "a downsize lacks history", d: none(engine.CauseDataIncomplete, engine.ShortHistory), want: true},
		{name: "a downsize waits for a young pod", d: none(engine.CauseTooYoung, engine.ShortYoungPod), want: true},
		{name: "invalid samples may hide pressure", d: none(engine.CauseDataInvalid, engine.ShortInvalidData)},
		{name: "a running pod without recent samples may hide pressure", d: none(engine.CauseDataIncomplete, engine.ShortNotFresh)},
		{name: "a scale-back window short of samples", d: none(engine.CauseDataIncomplete, engine.ShortFewSamples)},
		{name: "no data", d: none(engine.CauseDataIncomplete, engine.ShortNoData)},
		{name: "stale", d: none(engine.CauseDataStale, engine.ShortStale)},
		{name: "every pod too young", d: none(engine.CauseTooYoung, engine.ShortTooYoung)},
		{name: "query failed", d: none(engine.CauseQueryFailed, "")},
		{name: "a change", d: engine.Decision{Action: engine.Upsize}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.NoUpsizeNeeded(); got != tt.want {
				t.Errorf("NoUpsizeNeeded() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReasonWithoutEvidence: a decision whose evidence was not kept (made
// outside the math, or decoded from JSON) still renders a reason, for
// every cause and action, without a nil dereference.
func TestReasonWithoutEvidence(t *testing.T) {
	alloc := engine.Allocation{Form: engine.Fraction, GPUs: 0.5}
	causes := []engine.Cause{engine.CauseFits, engine.CauseNoBaseline, engine.CauseAtBound, engine.CauseBelowMinChange,
		engine.CauseNotAllowed, engine.CauseDataIncomplete, engine.CauseDataInvalid, engine.CauseDataStale, engine.CauseTooYoung,
		engine.CauseQueryFailed, engine.CauseEditRefused, engine.CauseOutOfScope, engine.CauseDuplicated, engine.CausePolicyInvalid,
		engine.CausePolicyConflict, engine.CauseUnsupported, engine.CauseManifestInvalid}
	for _, c := range causes {
		for _, d := range []engine.Decision{engine.Unjudged(alloc, c, "the detail"), engine.LeftAlone(alloc, c, "the detail"),
			{Action: engine.NoChange, Cause: c}} {
			if r := d.Reason(); r == "" {
				t.Errorf("%s %s: empty reason", d.Action, c)
			}
		}
	}
}
