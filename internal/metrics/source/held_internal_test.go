package source

import "testing"

// TestHeldPercent: while a recording is held, a collection waits for a
// tenth of the live heap, or heldGarbage when that is more, and never
// for more than the live heap again.
func TestHeldPercent(t *testing.T) {
	tests := []struct {
		live uint64
		want int
	}{
		{0, heldGCPercent},
		{16 << 20, 100},
		{48 << 20, 100},
		{96 << 20, 50},
		{240 << 20, 20},
		{480 << 20, 10},
		{2 << 30, 10},
	}
	for _, tc := range tests {
		if got := heldPercent(tc.live); got != tc.want {
			t.Errorf("heldPercent(%d MiB) = %d, want %d", tc.live>>20, got, tc.want)
		}
	}
}
