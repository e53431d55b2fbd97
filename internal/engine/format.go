package engine

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// FormatDuration renders d as policies write durations: 2m, 1h30m, 7d.
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		name string
		size time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}} {
		if d >= u.size {
			fmt.Fprintf(&b, "%d%s", d/u.size, u.name)
			d %= u.size
		}
	}
	if d > 0 || b.Len() == 0 {
		b.WriteString(d.String())
	}
	return b.String()
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
