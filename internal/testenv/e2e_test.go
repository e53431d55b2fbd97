package testenv

import (
	"fmt"
	"os/exec"
	"runtime"
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

// TestMeasureOwnPeak: a small child of a large test process reports its
// own peak, not the test process's. Started by os/exec directly, the
// child's ru_maxrss came out at least the 256 MiB held here.
func TestMeasureOwnPeak(t *testing.T) {
	if E2EChild() == "grow" {
		b := make([]byte, 64<<20)
		for i := range b {
			b[i] = byte(i)
		}
		fmt.Println(len(b))
		return
	}
	held := make([]byte, 256<<20)
	for i := 0; i < len(held); i += 4096 {
		held[i] = 1
	}
	small := Measure(t, exec.Command("true"))
	grown := Measure(t, Child("grow", "TestMeasureOwnPeak"))
	runtime.KeepAlive(held)
	if small.MaxRSS > 64<<20 {
		t.Errorf("true: peak RSS %d MiB, want its own few MiB, not the test's 256", small.MaxRSS>>20)
	}
	// No upper bound: under -race the child's shadow memory adds to it.
	if grown.MaxRSS < 64<<20 {
		t.Errorf("a child touching 64 MiB: peak RSS %d MiB, want at least 64", grown.MaxRSS>>20)
	}
	if grown.CPU <= 0 {
		t.Errorf("a child touching 64 MiB: CPU %v, want some", grown.CPU)
	}
}
