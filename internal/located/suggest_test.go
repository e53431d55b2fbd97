package located_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/located"
)

func TestNearest(t *testing.T) {
	known := []string{"computeHeadroom", "memoryHeadroom", "metricsWindow", "url", "user", "tokenFile", "tokenEnv", "output", "preset", "base"}
	tests := []struct {
		name, in, want string
		ok             bool
	}{
		{name: "a letter left out", in: "computeHeadrom", want: "computeHeadroom", ok: true},
		{name: "two letters swapped", in: "outptu", want: "output", ok: true},
		{name: "case only", in: "METRICSWINDOW", want: "metricsWindow", ok: true},
		{name: "case and a slip", in: "metricswindo", want: "metricsWindow", ok: true},
		{name: "a letter added", in: "presets", want: "preset", ok: true},
		{name: "two edits on a long name", in: "tokenFiel_", want: "tokenFile", ok: true},
		{name: "a short name takes one edit", in: "bse", want: "base", ok: true},
		{name: "a short name refuses two", in: "usr1", ok: false},
		{name: "a name cut short", in: "headroom", ok: false},
		{name: "the start of one name", in: "metrics", want: "metricsWindow", ok: true},
		{name: "the start of two names", in: "toke", ok: false},
		{name: "nothing close", in: "thresholdPercent", ok: false},
		{name: "empty", in: "", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := located.Nearest(tt.in, known)
			require.Equal(t, tt.ok, ok)
			if ok {
				require.Equal(t, tt.want, got)
			}
		})
	}
}
