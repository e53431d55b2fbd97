package prometheus_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header string
		want   time.Duration
		ok     bool
	}{
		{name: "absent", header: "", want: 0, ok: true},
		{name: "seconds", header: "3", want: 3 * time.Second, ok: true},
		{name: "seconds with spaces", header: " 7 ", want: 7 * time.Second, ok: true},
		{name: "an HTTP date", header: "Mon, 30 Nov 2026 12:00:10 GMT", want: 10 * time.Second, ok: true},
		{name: "a date in the past", header: "Mon, 30 Nov 2026 11:00:00 GMT", want: 0, ok: true},
		{name: "unreadable: the usual backoff", header: "soon", want: 0, ok: true},
		{name: "the longest wait allowed", header: "30", want: 30 * time.Second, ok: true},
		{name: "too long", header: "31", ok: false},
		{name: "a date too far", header: "Mon, 30 Nov 2026 13:00:00 GMT", ok: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := prometheus.RetryAfter(tt.header, now)
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}
