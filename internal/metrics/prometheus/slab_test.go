package prometheus_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Rooms carved one after another from a slab keep their samples apart:
// filling one to its room, growing or shrinking one, never changes
// another's. The room carved last grows and shrinks in place; any other
// is copied to new room.
func TestSlabRooms(t *testing.T) {
	// fill appends samples of value v up to n, or the room's end.
	fill := func(xs []usage.Sample, v float64, n int) []usage.Sample {
		for len(xs) < min(n, cap(xs)) {
			xs = append(xs, usage.Sample{T: int64(len(xs)), V: v})
		}
		return xs
	}
	same := func(a, b []usage.Sample) bool { return &a[:1][0] == &b[:1][0] }
	tests := []struct {
		name string
		// resize the first room (else the second) to c; inPlace says
		// it stays where it was.
		first   bool
		c       int
		inPlace bool
	}{
		{name: "the last room grows in place", c: 64, inPlace: true},
		{name: "the last room shrinks in place", c: 10, inPlace: true},
		{name: "an earlier room grows by a copy", first: true, c: 64},
		{name: "the last room past its chunk's end moves", c: 5000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s prometheus.Slab
			a := fill(s.Resize(nil, 16), 1, 16)
			b := fill(s.Resize(nil, 32), 2, 8)
			require.Equal(t, 16, cap(a))
			target := &b
			if tt.first {
				target = &a
			}
			was := *target
			*target = s.Resize(*target, tt.c)
			require.Equal(t, tt.c, cap(*target))
			require.Equal(t, tt.inPlace, same(was, *target))
			*target = fill(*target, 3, tt.c)
			c := fill(s.Resize(nil, 8), 4, 8)
			for _, x := range [][]usage.Sample{a, b, c} {
				for i, y := range x {
					require.Equal(t, int64(i), y.T)
				}
			}
			require.Equal(t, 2.0, b[0].V, "b kept its samples")
			require.Equal(t, 1.0, a[0].V, "a kept its samples")
			require.Equal(t, 4.0, c[0].V)
			require.Equal(t, 3.0, (*target)[len(*target)-1].V)
		})
	}
}
