package testenv

import (
	"strings"
	"testing"
)

func TestDeparture(t *testing.T) {
	tests := []struct {
		name     string
		got, was float64
		want     string // a word the departure holds, or "" when within
	}{
		{"cpu-ratio", 2.94, 2.94, ""},
		{"cpu-ratio", 3.67, 2.94, ""},      // 1.248×
		{"cpu-ratio", 3.69, 2.94, "above"}, // 1.255×
		{"cpu-ratio", 2.21, 2.94, ""},      // 0.752×
		{"cpu-ratio", 2.20, 2.94, "below"},
		{"cpu-exponent", 1.10, 0.96, ""},
		{"cpu-exponent", 1.12, 0.96, "above"},
		{"cpu-exponent", 0.80, 0.96, "below"},
		// An exponent's tolerance is not a quarter of it: 1.02 against
		// 0.80 would pass as a ratio.
		{"per10-exponent", 1.00, 0.80, "above"},
	}
	for _, tt := range tests {
		got := Departure(tt.name, tt.got, tt.was)
		if tt.want == "" && got != "" || tt.want != "" && !strings.Contains(got, tt.want) {
			t.Errorf("Departure(%q, %.2f, %.2f) = %q, want %q", tt.name, tt.got, tt.was, got, tt.want)
		}
	}
}
