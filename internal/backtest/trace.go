// Package backtest replays recorded GPU usage through rightsizing
// strategies — the project's own decision engine and the baselines people
// use — at a GitOps cadence, and scores each on slack, breaches and churn,
// the way Autopilot (EuroSys'20) judged its recommenders. It judges them
// out of sample under a protocol fixed before the results
// (docs/backtest/protocol.md): one role per workload, Holm-corrected
// paired verdicts, and a risk knob's frontier chosen on the tune half.
//
// It is one job in about 3,200 lines: a replay and what it is judged by.
// The baselines, scores, split and Pareto view all read the one
// simulation, so they stay beside it.
package backtest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Trace is the usage of one workload over time, both metrics in percent of
// one whole GPU (they may exceed 100 for demand beyond one GPU).
type Trace struct {
	// Name is the workload's; prefixed cluster/ when the trace names its
	// cluster, so that one name in two clusters is two workloads in
	// every row, split and plot.
	Name string
	// Cluster is the cluster of a trace read with a cluster column, or
	// of a recording's ClusterMap; "" for one cluster.
	Cluster string
	// Compute and Memory share timestamps (Unix ms from the trace's own
	// epoch), oldest first.
	Compute, Memory []usage.Sample
	// Step is the sampling interval.
	Step time.Duration
}

// Start and End bound the trace.
func (t *Trace) Start() int64 { return t.Compute[0].T }
func (t *Trace) End() int64   { return t.Compute[len(t.Compute)-1].T }

// Peak is the largest usage of either metric, in percent of one GPU.
func (t *Trace) Peak() float64 {
	c, _, _ := usage.Peak(t.Compute)
	m, _, _ := usage.Peak(t.Memory)
	return max(c, m)
}

// csvHeader is the schema of the shared traces (usage.csv and
// usage_derived_llm.csv.gz).
var csvHeader = []string{"workload", "timestamp_s", "sm_util_pct_of_gpu", "mem_used_pct_of_gpu"}

// clusterHeader is the schema of traces of several clusters: a cluster
// column first, so that one workload name in two clusters is two traces.
var clusterHeader = append([]string{"cluster"}, csvHeader...)

// traceName is the name of a cluster's workload in every output.
func traceName(cluster, workload string) string {
	if cluster == "" {
		return workload
	}
	return cluster + "/" + workload
}

// ReadCSVFile reads a trace file, gunzipping it when the name ends in .gz.
func ReadCSVFile(path string) ([]*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer z.Close()
		r = z
	}
	return ReadCSV(r, path)
}

// ReadCSV reads traces in the shared schema
// workload,timestamp_s,sm_util_pct_of_gpu,mem_used_pct_of_gpu. Rows of one
// workload must be contiguous with increasing timestamps; an error names
// the line and column.
func ReadCSV(r io.Reader, name string) ([]*Trace, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	fail := func(col, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s: %s", name, line, col, fmt.Sprintf(format, args...))
	}
	var traces []*Trace
	seen := map[string]bool{}
	var cur *Trace
	header := csvHeader
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if line == 1 {
			switch got := strings.Split(text, ","); {
			case slices.Equal(got, csvHeader):
			case slices.Equal(got, clusterHeader):
				header = clusterHeader
			default:
				return nil, fmt.Errorf("%s:1: header is %q, want %q or %q", name, text, strings.Join(csvHeader, ","), strings.Join(clusterHeader, ","))
			}
			continue
		}
		if text == "" {
			continue
		}
		f := strings.Split(text, ",")
		if len(f) != len(header) {
			return nil, fmt.Errorf("%s:%d: %d fields, want %d", name, line, len(f), len(header))
		}
		cluster := ""
		if len(header) == len(clusterHeader) {
			cluster, f = f[0], f[1:]
		}
		if f[0] == "" {
			return nil, fail(csvHeader[0], "empty")
		}
		secs, err := strconv.ParseFloat(f[1], 64)
		if err != nil || math.IsNaN(secs) || math.IsInf(secs, 0) || math.Abs(secs) > 1e12 {
			return nil, fail(csvHeader[1], "%q is not a number of seconds", f[1])
		}
		var vals [2]float64
		for i := range vals {
			v, err := strconv.ParseFloat(f[2+i], 64)
			if err != nil || math.IsInf(v, 0) || v < 0 {
				return nil, fail(csvHeader[2+i], "%q is not a percentage (a number ≥ 0, or NaN)", f[2+i])
			}
			vals[i] = v
		}
		t := int64(math.Round(secs * 1000))
		if key := traceName(cluster, f[0]); cur == nil || cur.Name != key {
			if seen[key] {
				return nil, fail(csvHeader[0], "rows of %q are not contiguous", key)
			}
			seen[key] = true
			cur = &Trace{Name: key, Cluster: cluster}
			traces = append(traces, cur)
		} else if t <= cur.Compute[len(cur.Compute)-1].T {
			return nil, fail(csvHeader[1], "%s is not after the previous row of %q", f[1], key)
		}
		cur.Compute = append(cur.Compute, usage.Sample{T: t, V: vals[0]})
		cur.Memory = append(cur.Memory, usage.Sample{T: t, V: vals[1]})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", name, line, err)
	}
	if line == 0 {
		return nil, fmt.Errorf("%s: empty file, want the header %q", name, strings.Join(csvHeader, ","))
	}
	for _, tr := range traces {
		tr.Step = medianStep(tr.Compute)
	}
	return traces, nil
}

// medianStep is the median interval between samples: the sampling
// interval, robust to the odd gap.
func medianStep(s []usage.Sample) time.Duration {
	if len(s) < 2 {
		return time.Minute
	}
	d := make([]int64, len(s)-1)
	for i := 1; i < len(s); i++ {
		d[i-1] = s[i].T - s[i-1].T
	}
	slices.Sort(d)
	return time.Duration(d[len(d)/2]) * time.Millisecond
}

// WriteCSV writes traces in the schema ReadCSV reads: with the cluster
// column when a trace names its cluster.
func WriteCSV(w io.Writer, traces []*Trace) error {
	var b bytes.Buffer
	clusters := slices.ContainsFunc(traces, func(tr *Trace) bool { return tr.Cluster != "" })
	if clusters {
		b.WriteString(strings.Join(clusterHeader, ",") + "\n")
	} else {
		b.WriteString(strings.Join(csvHeader, ",") + "\n")
	}
	for _, tr := range traces {
		name := tr.Name
		if clusters {
			name = tr.Cluster + "," + strings.TrimPrefix(name, tr.Cluster+"/")
		}
		for i := range tr.Compute {
			fmt.Fprintf(&b, "%s,%s,%s,%s\n", name, strconv.FormatFloat(float64(tr.Compute[i].T)/1000, 'f', -1, 64),
				strconv.FormatFloat(tr.Compute[i].V, 'f', -1, 64), strconv.FormatFloat(tr.Memory[i].V, 'f', -1, 64))
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// FromUsage turns a workload's recorded usage into a trace: at every
// timestamp, the hottest pod of each metric (replicas share one template),
// in percent of one GPU. Metrics recorded relative to the allocation are
// converted with each pod's own share, or alloc when the recording does
// not know it. A timestamp where no pod reports a metric holds NaN there.
func FromUsage(name string, w usage.Workload, relative map[usage.Metric]bool, alloc float64) *Trace {
	type point struct{ c, m float64 }
	byT := map[int64]*point{}
	for _, p := range w.Pods {
		share := alloc
		if p.Allocation > 0 {
			share = p.Allocation
		}
		for _, m := range usage.Metrics {
			for _, x := range p.Series[m] {
				if !x.Valid() {
					continue
				}
				v := x.V
				if relative[m] {
					v *= share
				}
				pt := byT[x.T]
				if pt == nil {
					pt = &point{c: math.NaN(), m: math.NaN()}
					byT[x.T] = pt
				}
				dst := &pt.c
				if m == usage.Memory {
					dst = &pt.m
				}
				if math.IsNaN(*dst) || v > *dst {
					*dst = v
				}
			}
		}
	}
	ts := make([]int64, 0, len(byT))
	for t := range byT {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	tr := &Trace{Name: name, Step: w.Step}
	for _, t := range ts {
		tr.Compute = append(tr.Compute, usage.Sample{T: t, V: byT[t].c})
		tr.Memory = append(tr.Memory, usage.Sample{T: t, V: byT[t].m})
	}
	if tr.Step <= 0 {
		tr.Step = medianStep(tr.Compute)
	}
	return tr
}
