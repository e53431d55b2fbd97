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
