package prometheus

import "testing"

// TestTHPDisabled: GODEBUG=disablethp=1 keeps the series' chunks off huge
// pages as it keeps the runtime's heap; the last setting wins.
func TestTHPDisabled(t *testing.T) {
	for _, tt := range []struct {
		godebug string
		off     bool
	}{
		{"", false},
		{"disablethp=1", true},
		{"gctrace=1,disablethp=1", true},
		{"disablethp=0", false},
		{"disablethp=1,disablethp=0", false},
		{"xdisablethp=1", false},
	} {
		if got := thpDisabled(tt.godebug); got != tt.off {
			t.Errorf("thpDisabled(%q) = %v, want %v", tt.godebug, got, tt.off)
		}
	}
}
