package usage_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// every builds samples at t = from, from+step, ... up to to (ms), valued 1.
func every(from, to, step int64) []usage.Sample {
	var s []usage.Sample
	for t := from; t <= to; t += step {
		s = append(s, usage.Sample{T: t, V: 1})
	}
	return s
}

func TestIn(t *testing.T) {
	s := every(0, 10, 1)
	require.Equal(t, every(4, 7, 1), usage.In(s, usage.Window{From: 3, To: 7}), "(From, To]")
	require.Empty(t, usage.In(s, usage.Window{From: 10, To: 20}))
	require.Empty(t, usage.In(nil, usage.Window{From: 0, To: 5}))
	require.Equal(t, s, usage.In(s, usage.Window{From: math.MinInt64, To: math.MaxInt64}))
}

func TestPeak(t *testing.T) {
	v, n, ok := usage.Peak([]usage.Sample{{T: 1, V: 3}, {T: 2, V: math.NaN()}, {T: 3, V: 7}, {T: 4, V: math.Inf(1)}, {T: 5, V: -1}})
	require.True(t, ok)
	require.Equal(t, 7.0, v)
	require.Equal(t, 2, n, "NaN, infinities and negatives are not usage")
	_, _, ok = usage.Peak([]usage.Sample{{T: 1, V: math.NaN()}})
	require.False(t, ok)
}

func TestCover(t *testing.T) {
	const m = int64(60_000)
	w := usage.Window{From: 0, To: 10 * m}
	tests := []struct {
		name     string
		s        []usage.Sample
		samples  int
		maxGap   time.Duration
		complete bool
	}{
		{name: "every minute", s: every(m, 10*m, m), samples: 10, maxGap: time.Minute, complete: true},
		{name: "one missed scrape", s: append(every(m, 4*m, m), every(6*m, 10*m, m)...), samples: 9, maxGap: 2 * time.Minute, complete: true},
		{name: "two missed scrapes", s: append(every(m, 4*m, m), every(7*m, 10*m, m)...), samples: 8, maxGap: 3 * time.Minute, complete: false},
		{name: "starts late", s: every(5*m, 10*m, m), samples: 6, maxGap: 5 * time.Minute, complete: false},
		{name: "stops early", s: every(m, 6*m, m), samples: 6, maxGap: 4 * time.Minute, complete: false},
		{name: "NaN is a hole", s: func() []usage.Sample {
			s := every(m, 10*m, m)
			for i := 3; i < 6; i++ {
				s[i].V = math.NaN()
			}
			return s
		}(), samples: 7, maxGap: 4 * time.Minute, complete: false},
		{name: "nothing", s: nil, samples: 0, maxGap: 10 * time.Minute, complete: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := usage.Cover(tt.s, w, time.Minute)
			require.Equal(t, usage.Coverage{Samples: tt.samples, Expected: 10, MaxGap: tt.maxGap, Complete: tt.complete}, c)
		})
	}
}

func TestPodAge(t *testing.T) {
	p := usage.Pod{Series: map[usage.Metric][]usage.Sample{usage.Memory: {{T: 5000, V: math.NaN()}, {T: 7000, V: 1}}, usage.Compute: {{T: 6000, V: 1}}}}
	age, ok := p.Age(10_000)
	require.True(t, ok)
	require.Equal(t, 4*time.Second, age, "from the oldest valid sample of any metric")
	p.Start = 1000
	age, _ = p.Age(10_000)
	require.Equal(t, 9*time.Second, age, "a known start wins")
	_, ok = usage.Pod{}.Age(10_000)
	require.False(t, ok)
}

func TestWindowEnding(t *testing.T) {
	at := time.Unix(100, 0)
	w := usage.WindowEnding(at, 10*time.Second)
	require.Equal(t, usage.Window{From: 90_000, To: 100_000}, w)
	require.True(t, w.Contains(100_000))
	require.False(t, w.Contains(90_000))
	require.Equal(t, 10*time.Second, w.Duration())
	require.Equal(t, 150*time.Second, usage.GapTolerance(time.Minute))
}
