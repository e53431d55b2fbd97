package engine

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// FormatDuration renders d as policies write durations: 2m, 1h30m, 7d.
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	// Appended by hand: a plan writes a few for each workload, and
	// fmt's were most of the JSON encoding of a span.
	b := make([]byte, 0, 16)
	for _, u := range []struct {
		name byte
		size time.Duration
	}{{'d', 24 * time.Hour}, {'h', time.Hour}, {'m', time.Minute}, {'s', time.Second}} {
		if d >= u.size {
			b = append(strconv.AppendInt(b, int64(d/u.size), 10), u.name)
			d %= u.size
		}
	}
	if d > 0 || len(b) == 0 {
		b = append(b, d.String()...)
	}
	return string(b)
}

// num renders an amount of GPUs for a reason: two decimals when that is
// exact, else three, so that the arithmetic shown can be followed.
func num(v float64) string {
	v = math.Round(v*1000) / 1000
	if math.Abs(v*100-math.Round(v*100)) < 1e-6 {
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3f", v)
}
