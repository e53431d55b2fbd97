package openmetrics_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
)

func TestParseValue(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want float64
		ok   bool
	}{
		{name: "integer", in: "42", want: 42, ok: true},
		{name: "decimal", in: "41.5", want: 41.5, ok: true},
		{name: "signs", in: "+1.5", want: 1.5, ok: true},
		{name: "negative zero", in: "-0", want: math.Copysign(0, -1), ok: true},
		{name: "leading dot", in: ".5", want: 0.5, ok: true},
		{name: "trailing dot", in: "5.", want: 5, ok: true},
		{name: "exponent", in: "1e2", want: 100, ok: true},
		{name: "many digits", in: "3.14159265358979323846", want: math.Pi, ok: true},
		{name: "Inf", in: "+Inf", want: math.Inf(1), ok: true},
		{name: "minus Inf", in: "-Inf", want: math.Inf(-1), ok: true},
		{name: "lower case inf", in: "inf", want: math.Inf(1), ok: true},
		{name: "empty", in: ""},
		{name: "dot", in: "."},
		{name: "sign", in: "-"},
		{name: "hex", in: "0x1p3"},
		{name: "separator", in: "1_000"},
		{name: "comma", in: "1,5"},
		{name: "overflow", in: "1e400"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := openmetrics.ParseValue([]byte(tt.in))
			require.Equal(t, tt.ok, ok)
			require.Equal(t, math.Float64bits(tt.want), math.Float64bits(got))
		})
	}
	t.Run("NaN", func(t *testing.T) {
		got, ok := openmetrics.ParseValue([]byte("NaN"))
		require.True(t, ok)
		require.True(t, math.IsNaN(got))
	})
}

// The fast path for plain decimals must round exactly as strconv does.
func TestParseValueMatchesStrconv(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringMatching(`[+-]?[0-9]{0,17}(\.[0-9]{0,25})?`).Draw(t, "s")
		got, ok := openmetrics.ParseValue([]byte(s))
		want, err := strconv.ParseFloat(s, 64)
		if (err == nil) != ok {
			t.Fatalf("ParseValue(%q) ok=%t, strconv err=%v", s, ok, err)
		}
		if ok && math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("ParseValue(%q) = %v, strconv %v", s, got, want)
		}
	})
}

func TestParseTimestamp(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int64
		ok   bool
	}{
		{name: "seconds", in: "1700000000", want: 1700000000000, ok: true},
		{name: "milliseconds", in: "1700000000.001", want: 1700000000001, ok: true},
		{name: "below a millisecond, down", in: "1700000000.0004999", want: 1700000000000, ok: true},
		{name: "half a millisecond, away from zero", in: "1700000000.0005", want: 1700000000001, ok: true},
		{name: "negative, half away from zero", in: "-1.0005", want: -1001, ok: true},
		{name: "exponent", in: "1.7e9", want: 1700000000000, ok: true},
		{name: "exponent, rounded", in: "1.0000000015e0", want: 1000, ok: true},
		{name: "largest", in: "9223372036854775.807", want: math.MaxInt64, ok: true},
		{name: "too large", in: "9223372036854775.808"},
		{name: "too large, by rounding", in: "9223372036854775.8075"},
		{name: "too large, exponent", in: "1e20"},
		{name: "NaN", in: "NaN"},
		{name: "Inf", in: "+Inf"},
		{name: "empty", in: ""},
		{name: "date", in: "2023-11-14"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := openmetrics.ParseTimestamp([]byte(tt.in))
			require.Equal(t, tt.ok, ok)
			require.Equal(t, tt.want, got)
		})
	}
}

// Every millisecond written as seconds reads back as itself.
func TestParseTimestampExact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ms := rapid.Int64Range(-math.MaxInt64, math.MaxInt64).Draw(t, "ms")
		s := metricstest.Seconds(ms)
		// Trailing zeros and extra digits below the millisecond change nothing.
		s += strings.Repeat("0", rapid.IntRange(0, 3).Draw(t, "zeros"))
		got, ok := openmetrics.ParseTimestamp([]byte(s))
		if !ok || got != ms {
			t.Fatalf("ParseTimestamp(%q) = %d, %t; want %d", s, got, ok, ms)
		}
	})
}
