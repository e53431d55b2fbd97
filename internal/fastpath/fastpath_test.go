package fastpath_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/fastpath"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestLiveBounds: the live path checks the tightest maxPercent, as the
// engine's step limit does, and an unset ceiling or maxPercent is the
// default, never no bound.
func TestLiveBounds(t *testing.T) {
	up := func(p int) *engine.MetricRules {
		return &engine.MetricRules{Upsize: &engine.UpsizeRules{MaxPercent: p}}
	}
	tests := []struct {
		name    string
		rules   engine.Rules
		ceiling float64
		percent int
	}{
		{"tightest of the metrics", engine.Rules{Strategy: &engine.StrategyRules{Ceiling: 0.8},
			Reactive: &engine.ReactiveRules{Metrics: map[usage.Metric]*engine.MetricRules{"memory": up(300), "compute": up(150), "other": {}}}}, 0.8, 150},
		{"no strategy, no reactive rules: defaults", engine.Rules{}, engine.DefaultCeiling, engine.DefaultMaxPercent},
		{"unset ceiling", engine.Rules{Strategy: &engine.StrategyRules{}}, engine.DefaultCeiling, engine.DefaultMaxPercent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, p := fastpath.Bounds(tt.rules)
			require.Equal(t, tt.ceiling, c)
			require.Equal(t, tt.percent, p)
		})
	}
}
