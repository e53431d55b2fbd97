package engine_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
)

// TestFormatDuration: durations read as policies write them, the largest
// unit first, and what is below a second as Go writes it.
func TestFormatDuration(t *testing.T) {
	tests := []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"},
		{-time.Minute, "0s"},
		{1500 * time.Millisecond, "1s500ms"},
		{90 * time.Second, "1m30s"},
		{19 * time.Minute, "19m"},
		{90 * time.Minute, "1h30m"},
		{7 * 24 * time.Hour, "7d"},
		{26*time.Hour + time.Second, "1d2h1s"},
		{400 * 24 * time.Hour, "400d"},
		{time.Millisecond, "1ms"},
	}
	for _, tc := range tests {
		require.Equal(t, tc.want, engine.FormatDuration(tc.d), "%v", tc.d)
	}
}
