package metrics_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// t0 is when test recordings start: 2023-11-14T22:13:20Z.
var t0 = time.Unix(1700000000, 0).UTC()

// recording writes an OpenMetrics file for a test, one series after the
// other (OpenMetrics only orders the samples within a series).
type recording struct {
	b strings.Builder
}

// add writes one sample per value, step apart from start (an offset from
// t0); a nil value leaves a gap. series is written as is:
// `name{label="value"}`.
func (r *recording) add(series string, start, step time.Duration, values ...any) *recording {
	for i, v := range values {
		if v == nil {
			continue
		}
		var s string
		switch v := v.(type) {
		case int:
			s = strconv.Itoa(v)
		case float64:
			s = strconv.FormatFloat(v, 'g', -1, 64)
		default:
			panic(fmt.Sprintf("value %v of type %T", v, v))
		}
		at := t0.Add(start + time.Duration(i)*step)
		fmt.Fprintf(&r.b, "%s %s %s\n", series, s, seconds(at.UnixMilli()))
	}
	return r
}

func (r *recording) String() string { return r.b.String() + "# EOF\n" }

func (r *recording) parse(t *testing.T) *metrics.Recorded {
	t.Helper()
	rec, err := metrics.ParseRecorded(strings.NewReader(r.String()), "test.om")
	require.NoError(t, err)
	return rec
}

// seconds renders Unix milliseconds as the seconds a file holds.
func seconds(ms int64) string {
	sign := ""
	u := uint64(ms)
	if ms < 0 {
		sign, u = "-", -u
	}
	return fmt.Sprintf("%s%d.%03d", sign, u/1000, u%1000)
}

// dump renders every sample of a recording, one line each, as
// `metric{labels} value@unix-ms`, for exact comparisons that NaN does not
// defeat.
func dump(r *metrics.Recorded) []string {
	var out []string
	for _, s := range r.Series() {
		name := seriesString(s)
		for _, x := range s.Samples {
			out = append(out, fmt.Sprintf("%s %s@%d", name, formatValue(x.V), x.T))
		}
	}
	return out
}

func seriesString(s metrics.Series) string {
	ls := make([]string, len(s.Labels))
	for i, l := range s.Labels {
		ls[i] = fmt.Sprintf("%s=%q", l.Name, l.Value)
	}
	return s.Metric + "{" + strings.Join(ls, ",") + "}"
}

func formatValue(v float64) string {
	if math.IsNaN(v) {
		return "NaN"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// render describes a usage.Result exactly and readably: times are seconds
// after t0, `-` is an unknown start.
func render(res usage.Result) string {
	var b strings.Builder
	refs := make([]usage.Ref, 0, len(res.Workloads))
	for ref := range res.Workloads {
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, func(a, b usage.Ref) int { return strings.Compare(a.String(), b.String()) })
	for _, ref := range refs {
		w := res.Workloads[ref]
		fmt.Fprintf(&b, "%s step=%s liveKnown=%t\n", ref, w.Step, w.LiveKnown)
		for _, p := range w.Pods {
			start := "-"
			if p.Start != 0 {
				start = offset(p.Start)
			}
			fmt.Fprintf(&b, "  %s live=%t start=%s\n", p.Name, p.Live, start)
			for _, m := range []usage.Metric{usage.Compute, usage.Memory} {
				s, ok := p.Series[m]
				if !ok {
					continue
				}
				xs := make([]string, len(s))
				for i, x := range s {
					xs[i] = formatValue(x.V) + "@" + offset(x.T)
				}
				fmt.Fprintf(&b, "    %s: %s\n", m, strings.Join(xs, " "))
			}
			if len(p.Series) > 2 {
				fmt.Fprintf(&b, "    unexpected series: %v\n", p.Series)
			}
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

// offset renders Unix milliseconds as seconds after t0.
func offset(ms int64) string {
	d := ms - t0.UnixMilli()
	if d%1000 == 0 {
		return strconv.FormatInt(d/1000, 10)
	}
	return strconv.FormatFloat(float64(d)/1000, 'f', -1, 64)
}

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	_, err := z.Write(b)
	require.NoError(t, err)
	require.NoError(t, z.Close())
	return buf.Bytes()
}
