package openmetrics

import (
	"bytes"
	"math"
	"strconv"
)

// pow10 holds the powers of ten that a float64 represents exactly.
var pow10 = [...]float64{
	1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
}

// parseValue parses a sample or exemplar value as Prometheus' OpenMetrics
// parser does: Go's float syntax minus hexadecimal mantissas and digit
// separators, plus NaN and (signed) Inf in any case.
func parseValue(b []byte) (float64, bool) {
	if v, ok := parseDecimal(b); ok {
		return v, true
	}
	if len(b) == 0 || bytes.ContainsAny(b, "pP_") {
		return 0, false
	}
	v, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return 0, false
	}
	return v, true
}

// parseDecimal is the fast path of parseValue for what exporters write
// nearly always: a plain decimal with at most 15 significant digits. Such a
// mantissa and a power of ten up to 1e22 are both exact in a float64, so one
// division rounds correctly, as strconv would. It reports false for anything
// else, which then goes through strconv.
func parseDecimal(b []byte) (float64, bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i++
	}
	var mant uint64
	digits, frac := 0, 0
	dot := false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			mant = mant*10 + uint64(c-'0')
			digits++
			if dot {
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false
		}
	}
	if digits == 0 || digits > 15 || frac >= len(pow10) {
		return 0, false
	}
	v := float64(mant) / pow10[frac]
	if neg {
		v = -v
	}
	return v, true
}

// maxMillis bounds timestamps so that every accepted one, and its
// negation, is an int64 number of milliseconds.
const maxMillis = math.MaxInt64

// parseTimestamp parses a timestamp in seconds and returns it in Unix
// milliseconds, rounded to the nearest millisecond (half away from zero).
// Plain decimals are converted exactly, so 1.001 is 1001 ms, where the
// float product 1.001*1000 is 1000.9999999999999 and promtool, which
// truncates it, stores 1000; other forms (exponents) go through strconv.
// NaN and infinities are no time.
func parseTimestamp(b []byte) (int64, bool) {
	if ms, ok, plain := parseDecimalMillis(b); plain {
		return ms, ok
	}
	if len(b) == 0 || bytes.ContainsAny(b, "pP_") {
		return 0, false
	}
	s, err := strconv.ParseFloat(string(b), 64)
	if err != nil || math.IsNaN(s) || math.IsInf(s, 0) {
		return 0, false
	}
	ms := math.Round(s * 1000)
	// float64(MaxInt64) rounds up to 2^63, so the bound is exclusive.
	if ms >= math.MaxInt64 || ms <= -math.MaxInt64 {
		return 0, false
	}
	return int64(ms), true
}

// parseDecimalMillis converts a plain decimal number of seconds to
// milliseconds with integer arithmetic. plain is false when b is not a
// plain decimal; ok is false when it is one but out of range.
func parseDecimalMillis(b []byte) (ms int64, ok, plain bool) {
	i, neg := 0, false
	if len(b) > 0 && (b[0] == '-' || b[0] == '+') {
		neg = b[0] == '-'
		i++
	}
	var whole, part uint64 // part: the first three fractional digits
	digits, frac := 0, 0
	dot, up, overflow := false, false, false
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case c >= '0' && c <= '9':
			digits++
			d := uint64(c - '0')
			switch {
			case !dot:
				if whole > (maxMillis/1000-d)/10 {
					overflow = true
				} else {
					whole = whole*10 + d
				}
			case frac < 3:
				part = part*10 + d
				frac++
			case frac == 3:
				up = d >= 5
				frac++
			}
		case c == '.' && !dot:
			dot = true
		default:
			return 0, false, false
		}
	}
	if digits == 0 {
		return 0, false, false
	}
	if overflow {
		return 0, false, true
	}
	for ; frac < 3; frac++ {
		part *= 10
	}
	v := whole*1000 + part
	if up {
		v++
	}
	if v > maxMillis {
		return 0, false, true
	}
	if neg {
		return -int64(v), true, true
	}
	return int64(v), true, true
}
