package backtest

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
	"time"
)

// Colours for strategies, in order; fixed so that plots compare.
var palette = []string{"#555555", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2"}

// canvas is an SVG plot area with linear axes.
type canvas struct {
	b                      strings.Builder
	w, h                   float64
	left, right, top, bot  float64
	xmin, xmax, ymin, ymax float64
}

func newCanvas(w, h, xmin, xmax, ymin, ymax float64) *canvas {
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	c := &canvas{w: w, h: h, left: 70, right: 190, top: 40, bot: 50, xmin: xmin, xmax: xmax, ymin: ymin, ymax: ymax}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&c.b, `<rect width="%g" height="%g" fill="white"/>`+"\n", w, h)
	return c
}

func (c *canvas) x(v float64) float64 {
	return c.left + (v-c.xmin)/(c.xmax-c.xmin)*(c.w-c.left-c.right)
}

func (c *canvas) y(v float64) float64 {
	return c.h - c.bot - (v-c.ymin)/(c.ymax-c.ymin)*(c.h-c.top-c.bot)
}

func (c *canvas) text(x, y float64, anchor, s string, extra ...string) {
	fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, strings.Join(extra, ""), html.EscapeString(s))
}

// axes draws both axes with ticks and titles.
func (c *canvas) axes(title, xlabel, ylabel string, xfmt, yfmt func(float64) string) {
	c.text(c.w/2, 22, "middle", title, ` font-size="15"`)
	for _, t := range ticks(c.xmin, c.xmax) {
		x := c.x(t)
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x, c.top, x, c.h-c.bot)
		c.text(x, c.h-c.bot+16, "middle", xfmt(t))
	}
	for _, t := range ticks(c.ymin, c.ymax) {
		y := c.y(t)
		fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", c.left, y, c.w-c.right, y)
		c.text(c.left-6, y+4, "end", yfmt(t))
	}
	fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n",
		c.left, c.top, c.w-c.left-c.right, c.h-c.top-c.bot)
	c.text((c.left+c.w-c.right)/2, c.h-12, "middle", xlabel)
	fmt.Fprintf(&c.b, `<text transform="translate(16,%.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", (c.top+c.h-c.bot)/2, html.EscapeString(ylabel))
}

func (c *canvas) legend(i int, colour, label string, dashed bool) {
	x, y := c.w-c.right+12, c.top+10+float64(i)*18
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="4 3"`
	}
	fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="2"%s/>`+"\n", x, y, x+20, y, colour, dash)
	c.text(x+26, y+4, "start", label)
}

func (c *canvas) polyline(pts [][2]float64, colour string, width float64, dashed bool) {
	if len(pts) == 0 {
		return
	}
	var b strings.Builder
	for _, p := range pts {
		fmt.Fprintf(&b, "%.1f,%.1f ", c.x(p[0]), c.y(p[1]))
	}
	dash := ""
	if dashed {
		dash = ` stroke-dasharray="4 3"`
	}
	fmt.Fprintf(&c.b, `<polyline fill="none" stroke="%s" stroke-width="%g"%s points="%s"/>`+"\n", colour, width, dash, strings.TrimSpace(b.String()))
}

func (c *canvas) writeTo(w io.Writer) error {
	c.b.WriteString("</svg>\n")
	_, err := io.WriteString(w, c.b.String())
	return err
}

// ticks returns about five round values spanning [lo, hi].
func ticks(lo, hi float64) []float64 {
	span := hi - lo
	step := math.Pow(10, math.Floor(math.Log10(span/5)))
	for _, m := range []float64{1, 2, 5, 10} {
		if span/(step*m) <= 6 {
			step *= m
			break
		}
	}
	var out []float64
	for v := math.Ceil(lo/step) * step; v <= hi+step/1e6; v += step {
		out = append(out, v)
	}
	return out
}

// PlotTradeoff draws relative slack against memory breaches, one point per
// strategy: down and to the left is better.
func PlotTradeoff(w io.Writer, title string, results []Result) error {
	var xmax float64
	for _, r := range results {
		xmax = max(xmax, breachPerDay(r.Total))
	}
	c := newCanvas(760, 440, 0, niceMax(xmax), 0, 100)
	c.axes(title, "memory breach, minutes per workload-day", "relative slack (%)",
		func(v float64) string { return fmt.Sprintf("%g", v) }, func(v float64) string { return fmt.Sprintf("%g%%", v) })
	for i, r := range results {
		colour := palette[i%len(palette)]
		x, y := c.x(breachPerDay(r.Total)), c.y(100*r.Total.RelativeSlack())
		fmt.Fprintf(&c.b, `<circle cx="%.1f" cy="%.1f" r="6" fill="%s"/>`+"\n", x, y, colour)
		c.text(x+9, y-7, "start", r.Strategy)
		c.legend(i, colour, fmt.Sprintf("%s: %.0f%%, %.1f", r.Strategy, 100*r.Total.RelativeSlack(), breachPerDay(r.Total)), false)
	}
	return c.writeTo(w)
}

func breachPerDay(s Score) float64 {
	if s.Days == 0 {
		return 0
	}
	return s.MemoryBreachMinutes / s.Days
}

func niceMax(v float64) float64 {
	if v <= 0 {
		return 1
	}
	t := ticks(0, v*1.1)
	step := t[1] - t[0]
	return math.Ceil(v*1.1/step) * step
}

// PlotWorkload draws one workload's usage against each strategy's
// allocation over time.
func PlotWorkload(w io.Writer, tr *Trace, results []Result) error {
	idx := -1
	for i, ws := range results[0].Workloads {
		if ws.Name == tr.Name {
			idx = i
		}
	}
	if idx < 0 {
		return fmt.Errorf("no results for workload %s", tr.Name)
	}
	hours := func(t int64) float64 { return float64(t-tr.Start()) / float64(time.Hour.Milliseconds()) }
	var ymax float64
	for i := range tr.Compute {
		ymax = max(ymax, tr.Compute[i].V/100, tr.Memory[i].V/100)
	}
	for _, r := range results {
		for _, ch := range r.Workloads[idx].Timeline.Changes {
			ymax = max(ymax, ch.Alloc.GPUs)
		}
	}
	c := newCanvas(900, 420, 0, hours(tr.End()), 0, niceMax(ymax))
	c.axes(tr.Name, "hours since the trace began", "GPUs",
		func(v float64) string { return fmt.Sprintf("%g", v) }, func(v float64) string { return fmt.Sprintf("%.2g", v) })
	var compute, memory [][2]float64
	for i := range tr.Compute {
		if tr.Compute[i].Valid() {
			compute = append(compute, [2]float64{hours(tr.Compute[i].T), tr.Compute[i].V / 100})
		}
		if tr.Memory[i].Valid() {
			memory = append(memory, [2]float64{hours(tr.Memory[i].T), tr.Memory[i].V / 100})
		}
	}
	c.polyline(compute, "#bbbbbb", 1, false)
	c.polyline(memory, "#17becf", 1.2, false)
	c.legend(0, "#bbbbbb", "compute used", false)
	c.legend(1, "#17becf", "memory used", false)
	for i, r := range results {
		var pts [][2]float64
		changes := r.Workloads[idx].Timeline.Changes
		for j, ch := range changes {
			if j > 0 {
				pts = append(pts, [2]float64{hours(ch.T), changes[j-1].Alloc.GPUs})
			}
			pts = append(pts, [2]float64{hours(ch.T), ch.Alloc.GPUs})
		}
		pts = append(pts, [2]float64{hours(tr.End()), changes[len(changes)-1].Alloc.GPUs})
		colour := palette[i%len(palette)]
		c.polyline(pts, colour, 2, i%2 == 1)
		c.legend(i+2, colour, r.Strategy+" allocation", i%2 == 1)
	}
	return c.writeTo(w)
}
