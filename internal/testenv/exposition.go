package testenv

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Sample is one sample of an exporter's scrape, named and labelled as the
// exporter wrote it.
type Sample struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// String writes s as the text format does, labels sorted by name.
func (s Sample) String() string {
	names := make([]string, 0, len(s.Labels))
	for n := range s.Labels {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(s.Name)
	for i, n := range names {
		sep := ","
		if i == 0 {
			sep = "{"
		}
		fmt.Fprintf(&b, "%s%s=%q", sep, n, s.Labels[n])
	}
	if len(names) > 0 {
		b.WriteByte('}')
	}
	b.WriteByte(' ')
	b.WriteString(strconv.FormatFloat(s.Value, 'g', -1, 64))
	return b.String()
}

// Samples are the samples of one scrape, sorted by name, then labels.
type Samples []Sample

// ParseText reads a scrape in the Prometheus text format (0.0.4) with the
// parser Prometheus's own libraries use: what an exporter answers a plain
// GET of /metrics. Histograms and summaries come out as their _bucket,
// _sum and _count samples.
func ParseText(text []byte) (Samples, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parsing the scrape: %w", err)
	}
	fams := make([]string, 0, len(families))
	for name := range families {
		fams = append(fams, name)
	}
	slices.Sort(fams)
	var out Samples
	for _, name := range fams {
		vec, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{}, families[name])
		if err != nil {
			return nil, fmt.Errorf("reading the samples of %s: %w", name, err)
		}
		for _, v := range vec {
			s := Sample{Labels: map[string]string{}, Value: float64(v.Value)}
			for k, lv := range v.Metric {
				if k == model.MetricNameLabel {
					s.Name = string(lv)
					continue
				}
				s.Labels[string(k)] = string(lv)
			}
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b Sample) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.String(), b.String()))
	})
	return out, nil
}

// Find returns the samples named name whose labels include each pair of
// labels (name, value, name, value...); a value "" asks that the label be
// absent, as in PromQL.
func (ss Samples) Find(name string, labels ...string) Samples {
	if len(labels)%2 != 0 {
		panic("Samples.Find: labels come in name, value pairs")
	}
	var out Samples
next:
	for _, s := range ss {
		if s.Name != name {
			continue
		}
		for i := 0; i < len(labels); i += 2 {
			if s.Labels[labels[i]] != labels[i+1] {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// String writes the samples one a line, for a failing test to show.
func (ss Samples) String() string {
	var b strings.Builder
	for _, s := range ss {
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// TimedScrape is one scrape in the OpenMetrics text format, as an exporter
// answers a scraper that asks for it (Accept: application/openmetrics-text),
// and the time it stands for.
type TimedScrape struct {
	At          time.Time
	OpenMetrics []byte
}

// OpenMetricsRecording joins scrapes, in increasing time, into one
// recording: what `promtool tsdb create-blocks-from openmetrics` backfills
// and internal/metrics/openmetrics reads. Each sample gets its scrape's
// time, in seconds; names, labels, values and metadata stay as the
// exporter wrote them. A family's samples, and a series' points, are kept
// together, as OpenMetrics requires, in the order they first appear.
func OpenMetricsRecording(scrapes ...TimedScrape) ([]byte, error) {
	r := recorder{fams: map[string]*omFamily{}}
	for i, sc := range scrapes {
		if i > 0 && !sc.At.After(scrapes[i-1].At) {
			return nil, fmt.Errorf("scrape %d: at %v, not after scrape %d at %v", i+1, sc.At, i, scrapes[i-1].At)
		}
		if err := r.add(i, sc); err != nil {
			return nil, err
		}
	}
	var b bytes.Buffer
	for _, name := range r.order {
		f := r.fams[name]
		for _, m := range f.meta {
			b.WriteString(m)
			b.WriteByte('\n')
		}
		for _, key := range f.series {
			for _, p := range f.points[key] {
				b.WriteString(key)
				b.WriteByte(' ')
				b.WriteString(p)
				b.WriteByte('\n')
			}
		}
	}
	b.WriteString("# EOF\n")
	return b.Bytes(), nil
}

// recorder gathers the scrapes of a recording by family and series.
type recorder struct {
	order []string // family names, in first-seen order
	fams  map[string]*omFamily
}

// omFamily is one metric family of a recording.
type omFamily struct {
	meta     []string // HELP, TYPE and UNIT lines
	metaFrom int      // the scrape they come from, -1 before one
	series   []string // name and labels, in first-seen order
	points   map[string][]string
}

func (r *recorder) family(name string) *omFamily {
	f := r.fams[name]
	if f == nil {
		f = &omFamily{metaFrom: -1, points: map[string][]string{}}
		r.fams[name] = f
		r.order = append(r.order, name)
	}
	return f
}

// add files the lines of scrape i under their families.
func (r *recorder) add(i int, sc TimedScrape) error {
	ts := strconv.FormatFloat(float64(sc.At.UnixMilli())/1000, 'f', -1, 64)
	lines := strings.Split(strings.TrimSuffix(string(sc.OpenMetrics), "\n"), "\n")
	if lines[len(lines)-1] != "# EOF" {
		return fmt.Errorf("scrape %d: not OpenMetrics: it does not end with \"# EOF\" (ask with Accept: application/openmetrics-text)", i+1)
	}
	var cur string // the family the metadata last named
	for n, line := range lines[:len(lines)-1] {
		if rest, ok := strings.CutPrefix(line, "# "); ok {
			kind, rest, _ := strings.Cut(rest, " ")
			name, _, _ := strings.Cut(rest, " ")
			if kind != "HELP" && kind != "TYPE" && kind != "UNIT" || name == "" {
				return fmt.Errorf("scrape %d, line %d: a comment OpenMetrics does not allow: %q", i+1, n+1, line)
			}
			cur = name
			// The metadata of the first scrape that has the family stands.
			if f := r.family(name); f.metaFrom < 0 || f.metaFrom == i {
				f.meta, f.metaFrom = append(f.meta, line), i
			}
			continue
		}
		key, value, err := splitSample(line)
		if err != nil {
			return fmt.Errorf("scrape %d, line %d: %w: %q", i+1, n+1, err, line)
		}
		name, _, _ := strings.Cut(key, "{")
		if cur == "" || !strings.HasPrefix(name, cur) {
			cur = name // a sample with no metadata is its own family
		}
		f := r.family(cur)
		if _, ok := f.points[key]; !ok {
			f.series = append(f.series, key)
		}
		f.points[key] = append(f.points[key], value+" "+ts)
	}
	return nil
}

// splitSample splits a sample line without a timestamp into its name and
// labels, as written, and its value: the value is the last field, as a
// label value may hold spaces.
func splitSample(line string) (key, value string, err error) {
	sp := strings.LastIndexByte(line, ' ')
	if sp < 0 {
		return "", "", errors.New("a sample without a value")
	}
	key, value = line[:sp], line[sp+1:]
	if open := strings.IndexByte(key, '{'); open >= 0 && !strings.HasSuffix(key, "}") || open < 0 && strings.ContainsAny(key, " \t") {
		return "", "", errors.New("a sample with a timestamp or an exemplar already")
	}
	if _, err := strconv.ParseFloat(value, 64); err != nil {
		return "", "", fmt.Errorf("value %q is not a number", value)
	}
	return key, value, nil
}
