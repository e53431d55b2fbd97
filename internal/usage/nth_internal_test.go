package usage

import (
	"slices"
	"testing"
)

// FuzzNth: the selection gives the value a sort puts at k, for any
// values (the samples are finite: Valid) and any k.
func FuzzNth(f *testing.F) {
	f.Add([]byte{3, 1, 2}, uint16(1))
	f.Add([]byte{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 1}, uint16(0))
	f.Fuzz(func(t *testing.T, raw []byte, k uint16) {
		if len(raw) == 0 {
			return
		}
		// Few distinct values make ties, the case a partition gets wrong.
		vals := make([]float64, 0, len(raw)*3)
		for r := range 3 {
			for _, b := range raw {
				vals = append(vals, float64(b%17)+float64(r)/4)
			}
		}
		sorted := slices.Sorted(slices.Values(vals))
		i := int(k) % len(vals)
		if got := nth(vals, i); got != sorted[i] {
			t.Fatalf("nth(%d) = %v, sorted has %v", i, got, sorted[i])
		}
	})
}

// TestNthOrders: sorted, reversed, equal and sawtooth runs, long enough
// to partition, select as a sort does at every rank.
func TestNthOrders(t *testing.T) {
	const n = 300
	shapes := map[string]func(i int) float64{
		"sorted":   func(i int) float64 { return float64(i) },
		"reversed": func(i int) float64 { return float64(n - i) },
		"equal":    func(int) float64 { return 7 },
		"sawtooth": func(i int) float64 { return float64(i % 10) },
		"organ":    func(i int) float64 { return float64(min(i, n-i)) },
	}
	for name, at := range shapes {
		t.Run(name, func(t *testing.T) {
			vals := make([]float64, n)
			for i := range vals {
				vals[i] = at(i)
			}
			sorted := slices.Sorted(slices.Values(vals))
			for k := range n {
				v := slices.Clone(vals)
				if got := nth(v, k); got != sorted[k] {
					t.Fatalf("nth(%d) = %v, want %v", k, got, sorted[k])
				}
			}
		})
	}
}
