package usage

import (
	"math"
	"math/bits"
	"slices"
	"time"
)

// Digest is what a pod's samples still tell once its workload is decided:
// a dashboard counts the pods that report usage and sums their 95th
// percentiles. It is a few numbers where the samples are hundreds.
type Digest struct {
	// Sampled is true when the pod has compute or memory samples, valid or
	// not.
	Sampled bool
	// P95 holds each metric's 95th percentile (nearest rank) of the valid
	// samples, in the metric's unit; a metric without one is absent.
	P95 map[Metric]float64
}

// Digest is the pod's digest: the one Release kept, or else made from
// its samples.
func (p Pod) Digest() Digest {
	if p.digest != nil {
		return *p.digest
	}
	d := Digest{Sampled: len(p.Series[Compute])+len(p.Series[Memory]) > 0}
	var vals []float64
	for _, m := range Metrics {
		vals = vals[:0]
		for _, s := range p.Series[m] {
			if s.Valid() {
				vals = append(vals, s.V)
			}
		}
		if len(vals) == 0 {
			continue
		}
		if d.P95 == nil {
			d.P95 = make(map[Metric]float64, len(Metrics))
		}
		d.P95[m] = nth(vals, max(0, int(math.Ceil(0.95*float64(len(vals))))-1))
	}
	return d
}

// nth is the k-th smallest of vals (from 0), which it reorders: a
// selection, not a sort. Release digests every pod of every decision,
// and sorting a week of samples a pod made a plan of such a recording
// 40 % dearer. Partitions around a median of three; one that goes on
// past twice the bits of len(vals) sorts what is left, so no input is
// quadratic.
func nth(vals []float64, k int) float64 {
	lo, hi := 0, len(vals)-1
	for budget := 2 * bits.Len(uint(len(vals))); hi-lo > 16; budget-- {
		if budget == 0 {
			slices.Sort(vals[lo : hi+1])
			return vals[k]
		}
		mid := lo + (hi-lo)/2
		if vals[mid] < vals[lo] {
			vals[mid], vals[lo] = vals[lo], vals[mid]
		}
		if vals[hi] < vals[lo] {
			vals[hi], vals[lo] = vals[lo], vals[hi]
		}
		if vals[hi] < vals[mid] {
			vals[hi], vals[mid] = vals[mid], vals[hi]
		}
		pivot := vals[mid]
		i, j := lo, hi
		for i <= j {
			for vals[i] < pivot {
				i++
			}
			for vals[j] > pivot {
				j--
			}
			if i <= j {
				vals[i], vals[j] = vals[j], vals[i]
				i++
				j--
			}
		}
		// Now vals[lo..j] <= pivot <= vals[i..hi], and between them, if
		// anything, equals the pivot.
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return vals[k]
		}
	}
	slices.Sort(vals[lo : hi+1])
	return vals[k]
}

// ChartPoints is how many bins a Chart has: a pull request draws a day
// in hours.
const ChartPoints = 24

// Chart is a workload's usage in ChartPoints bins of Step milliseconds
// that end at To: for each metric, the largest scaled valid sample of any
// pod in each bin.
type Chart struct {
	From, To, Step int64
	// Lines holds the metrics with a valid sample in the span.
	Lines map[Metric][]float64
}

// Scale gives the factor a pod's samples of a metric are multiplied by in
// a Chart, and false for a metric the chart leaves out.
type Scale func(p Pod, m Metric) (float64, bool)

// Chart draws the workload's usage over the window before its newest
// sample, or from its oldest when the history is shorter (an empty stretch
// would draw as zero usage). It is the Chart Release kept, when it did;
// false when there is nothing to draw.
func (w Workload) Chart(window time.Duration, scale Scale) (Chart, bool) {
	if w.chart != nil {
		c := w.chart.chart()
		return c, len(c.Lines) > 0
	}
	c := w.draw(window, scale)
	return c, len(c.Lines) > 0
}

func (w Workload) draw(window time.Duration, scale Scale) Chart {
	if window <= 0 || len(w.Pods) == 0 {
		return Chart{}
	}
	var to int64
	for _, p := range w.Pods {
		for _, s := range p.Series {
			if len(s) > 0 {
				to = max(to, s[len(s)-1].T)
			}
		}
	}
	from := to
	for _, p := range w.Pods {
		for _, s := range p.Series {
			if len(s) > 0 {
				from = min(from, s[0].T-1)
			}
		}
	}
	from = max(from, to-window.Milliseconds())
	c := Chart{From: from, To: to, Step: (to - from) / ChartPoints}
	if c.Step <= 0 {
		return Chart{}
	}
	for _, m := range Metrics {
		vals := make([]float64, ChartPoints)
		seen := false
		for _, p := range w.Pods {
			f, ok := scale(p, m)
			if !ok {
				break
			}
			for _, x := range In(p.Series[m], Window{From: from, To: to}) {
				if !x.Valid() {
					continue
				}
				i := min(ChartPoints-1, int((x.T-from-1)/c.Step))
				vals[i] = max(vals[i], x.V*f)
				seen = true
			}
		}
		if seen {
			if c.Lines == nil {
				c.Lines = map[Metric][]float64{}
			}
			c.Lines[m] = vals
		}
	}
	return c
}

// Release is the workload without its samples: each pod keeps its
// Digest and the workload its Chart over window, so that a run of
// thousands of workloads lets go of the samples once each is decided
// instead of holding them until its pull request is written.
func (w Workload) Release(window time.Duration, scale Scale) Workload {
	w.chart = keep(w.draw(window, scale))
	w.Pods = slices.Clone(w.Pods)
	for i, p := range w.Pods {
		d := p.Digest()
		p.digest, p.Series = &d, nil
		w.Pods[i] = p
	}
	return w
}

// drawn is a Chart as Release keeps it, until a pull request draws it:
// 416 bytes where the map and its slices took about 800, held for every
// workload of a run.
type drawn struct {
	from, to, step int64
	lines          [len(Metrics)][ChartPoints]float64
	has            [len(Metrics)]bool
}

func keep(c Chart) *drawn {
	d := &drawn{from: c.From, to: c.To, step: c.Step}
	for i, m := range Metrics {
		if v, ok := c.Lines[m]; ok {
			d.has[i] = true
			copy(d.lines[i][:], v)
		}
	}
	return d
}

// chart is the Chart kept, its lines the caller's own.
func (d *drawn) chart() Chart {
	c := Chart{From: d.from, To: d.to, Step: d.step}
	for i, m := range Metrics {
		if d.has[i] {
			if c.Lines == nil {
				c.Lines = make(map[Metric][]float64, len(Metrics))
			}
			c.Lines[m] = slices.Clone(d.lines[i][:])
		}
	}
	return c
}

// Released reports whether Release let go of the workload's samples.
func (w Workload) Released() bool { return w.chart != nil }
