package openmetrics

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// series is a Series while it is being parsed.
type series struct {
	metrics.Series
	// line is where the newest sample was read, for ordering errors, and
	// last and n its time and how many were read, kept or not.
	line int
	last int64
	n    int
	// keep says whether the series' samples are kept at all; ksm that
	// it is kube-state-metrics', whose newest report before a window
	// still answers in it.
	keep, ksm bool
	// carried is a ksm series' newest sample before the window, not a
	// staleness marker, while no sample in the window has followed it.
	carried usage.Sample
	carry   bool
	// intervals counts the series' metric's intervals between samples;
	// ivLen and ivRun hold the run of equal ones not yet counted, since
	// scrapes are regular and a map update per sample would cost.
	intervals    map[int64]int
	ivLen, ivRun int64
}

// parser reads the OpenMetrics text format as promtool's backfill (2.42)
// does, one line at a time, with a timestamp required on every sample. It
// holds files to two rules of OpenMetrics that promtool lets pass: a label
// value may escape only \\, \" and \n (promtool keeps \t as two
// characters), and a series' timestamps must strictly increase (promtool
// drops a sample that does not, silently). And it rounds timestamps to the
// nearest millisecond, where promtool truncates them.
//
// Recordings repeat a few hundred series over hundreds of thousands of
// lines, so a series' text is looked up as written before anything else:
// a line whose series was seen before costs one map lookup and two number
// conversions, and allocates nothing beyond its sample. A dump writes a
// series' samples one after the other, so the line's series is first
// compared with the last line's, which spares the lookup: hashing the
// text and finding it among tens of thousands of series (a cache miss
// each) grew faster than the file.
type parser struct {
	file   string
	line   int
	series seriesStore
	// raw maps a series as written (name and label set) to its index;
	// canon maps its canonical form, so that the same series written with
	// another label order or escaping is still one series.
	raw   map[string]int
	canon map[string]int
	// lastText is the series of the last sample line as written, lastIdx
	// its index, or -1.
	lastText []byte
	lastIdx  int
	strs     map[string]string
	spans    []labelSpan
	key      []byte

	keep keep
	// ksm names the kube-state-metrics series (metrics.KubeStateMetrics).
	ksm []string
	// times sees every sample, for the span.
	times sampleTimes
	// intervals counts, per kept metric, the intervals between
	// consecutive samples of a series, for the scrape interval.
	intervals map[string]map[int64]int
	// hint is how many samples the series last added to holds, for the
	// next one's first allocation (grow).
	hint int
	// long holds a line longer than the read buffer.
	long []byte
}

// maxLine bounds a line, its newline included, so that a file that is not OpenMetrics (a
// gzipped run of zeros has no newline at all) fails on its first line
// instead of filling memory. Recorded lines run to a few hundred bytes.
const maxLine = 1 << 20

// readBuffer is the read buffer's size; longer lines go through
// parser.long.
const readBuffer = 64 << 10

// labelSpan locates one label of the line being parsed.
type labelSpan struct {
	name, val [2]int // byte offsets: [start, end)
	escaped   bool
}

func newParser(file string) *parser {
	return &parser{
		file:      file,
		ksm:       metrics.KubeStateMetrics(),
		intervals: make(map[string]map[int64]int),
		raw:       make(map[string]int),
		lastIdx:   -1,
		canon:     make(map[string]int),
		strs:      make(map[string]string),
	}
}

// errorf reports where the file breaks the OpenMetrics text format, or the
// stricter rules of a recording (a timestamp on every sample): on the
// current line, at the 1-based byte column col, or 0 when the line as a
// whole is at fault.
func (p *parser) errorf(col int, format string, args ...any) error {
	return &located.Error{File: p.file, Line: p.line, Column: col, Err: fmt.Errorf(format, args...)}
}

// readError is a failure to read the line after the current one.
func (p *parser) readError(err error) error {
	return fmt.Errorf("read recorded usage %w", &located.Error{File: p.file, Line: p.line + 1, Err: err})
}

// parse reads a whole file, line by line. It ends at "# EOF", which must
// be the last line, optionally followed by one newline, exactly as
// promtool wants.
func (p *parser) parse(r io.Reader) error {
	br := bufio.NewReaderSize(r, readBuffer)
	for {
		line, err := p.readLine(br)
		if err != nil {
			return err
		}
		if line == nil {
			break
		}
		p.line++
		newline := line[len(line)-1] == '\n'
		if newline {
			line = line[:len(line)-1]
		}
		if len(line) > 0 && line[0] == '#' {
			eof, err := p.comment(line)
			if err != nil {
				return err
			}
			if eof {
				if !newline {
					return nil
				}
				switch _, err := br.Peek(1); {
				case err == nil:
					p.line++
					return p.errorf(0, `content after "# EOF" (it must be the last line)`)
				case !errors.Is(err, io.EOF):
					return p.readError(err)
				}
				return nil
			}
			continue
		}
		if err := p.sample(line); err != nil {
			return err
		}
	}
	if p.line == 0 {
		p.line = 1
	}
	return p.errorf(0, `file ends without "# EOF" (OpenMetrics requires it as the last line)`)
}

// readLine returns the next line with its newline, if it has one, or nil
// at the end of the input. The line is valid until the next call.
func (p *parser) readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		// Rare: gather the line in a buffer of its own, up to the bound.
		p.long = append(p.long[:0], line...)
		for errors.Is(err, bufio.ErrBufferFull) && len(p.long) <= maxLine {
			line, err = br.ReadSlice('\n')
			p.long = append(p.long, line...)
		}
		if len(p.long) > maxLine {
			p.line++
			return nil, p.errorf(0, "line longer than %d MiB (a recording's lines are short: is this OpenMetrics text?)", maxLine>>20)
		}
		line = p.long
	}
	switch {
	case err == nil, errors.Is(err, io.EOF):
		if len(line) == 0 {
			return nil, nil
		}
		return line, nil
	}
	return nil, p.readError(err)
}

// comment handles a line starting with '#': metadata or the end marker.
func (p *parser) comment(line []byte) (eof bool, err error) {
	s := string(line) // short lines, and rare ones: the allocation does not matter
	switch {
	case s == "# EOF":
		return true, nil
	case strings.HasPrefix(s, "# EOF"):
		return false, p.errorf(6, `unexpected text after "# EOF"`)
	case strings.HasPrefix(s, "# HELP "), strings.HasPrefix(s, "# TYPE "), strings.HasPrefix(s, "# UNIT "):
		return false, p.metadata(s[2:6], line)
	}
	return false, p.errorf(1, "comment is not # HELP, # TYPE, # UNIT or # EOF (OpenMetrics allows no other)")
}

// metricTypes are the types OpenMetrics defines.
var metricTypes = map[string]bool{
	"counter": true, "gauge": true, "histogram": true, "gaugehistogram": true,
	"summary": true, "info": true, "stateset": true, "unknown": true,
}

// metadata checks a # HELP, # TYPE or # UNIT line. Recordings carry no use
// for it, but promtool rejects malformed metadata, so this does too.
func (p *parser) metadata(kind string, line []byte) error {
	const start = len("# HELP ")
	n := scanMetricName(line[start:])
	if n == 0 {
		return p.errorf(start+1, "expected a metric name after # %s", kind)
	}
	end := start + n
	if end == len(line) || line[end] != ' ' {
		return p.errorf(end+1, "expected a space and the %s text after the metric name", strings.ToLower(kind))
	}
	name, text := string(line[start:end]), string(line[end+1:])
	switch kind {
	case "TYPE":
		if !metricTypes[text] {
			return p.errorf(end+2, "invalid metric type %q (want counter, gauge, histogram, gaugehistogram, summary, info, stateset or unknown)", text)
		}
	case "UNIT":
		if text != "" && !strings.HasSuffix(name, "_"+text) {
			return p.errorf(end+2, "unit %q is not a suffix of metric %q", text, name)
		}
	case "HELP":
		if !utf8.ValidString(text) {
			return p.errorf(end+2, "help text is not valid UTF-8")
		}
	}
	return nil
}

// sample parses `name{labels} value timestamp [# {labels} value [timestamp]]`.
func (p *parser) sample(line []byte) error {
	if len(line) == 0 {
		return p.errorf(0, "empty line (OpenMetrics allows none)")
	}
	// The fast path: a series seen before, written the same way, then a
	// value and a timestamp. Its text was checked when first seen, and the
	// last two spaces can only fall elsewhere when what follows them fails
	// to parse, or names no series; then the full parse below runs and
	// reports exactly what is wrong.
	if te := bytes.LastIndexByte(line, ' '); te > 0 {
		if vs := bytes.LastIndexByte(line[:te], ' '); vs > 0 {
			if i, ok := p.seen(line[:vs]); ok {
				v, okV := parseValue(line[vs+1 : te])
				t, okT := parseTimestamp(line[te+1:])
				if okV && okT {
					return p.record(i, line[:vs], te+1, t, v)
				}
			}
		}
	}
	n := scanMetricName(line)
	if n == 0 {
		return p.errorf(1, "expected a metric name, found %q", firstRune(line))
	}
	pos := n
	p.spans = p.spans[:0]
	if pos < len(line) && line[pos] == '{' {
		var err error
		if pos, p.spans, err = p.labels(line, pos+1, p.spans); err != nil {
			return err
		}
	}
	text := line[:pos]

	if pos == len(line) || line[pos] != ' ' {
		return p.errorf(pos+1, "expected a space and the sample value after the series")
	}
	vs, ve := pos+1, token(line, pos+1)
	if vs == ve {
		return p.errorf(vs+1, "expected the sample value")
	}
	v, ok := parseValue(line[vs:ve])
	if !ok {
		return p.errorf(vs+1, "invalid sample value %q", line[vs:ve])
	}
	pos = ve

	if pos == len(line) || (pos+1 < len(line) && line[pos+1] == '#') {
		return p.errorf(0, "sample has no timestamp (a recorded file needs one on every sample)")
	}
	ts, te := pos+1, token(line, pos+1)
	if ts == te {
		return p.errorf(ts+1, "expected the sample timestamp")
	}
	t, ok := parseTimestamp(line[ts:te])
	if !ok {
		return p.errorf(ts+1, "invalid timestamp %q (want seconds since the epoch)", line[ts:te])
	}
	if te < len(line) {
		if err := p.exemplar(line, te, line[:n]); err != nil {
			return err
		}
	}

	i, ok := p.raw[string(text)]
	if !ok {
		var err error
		if i, err = p.newSeries(line, n); err != nil {
			return err
		}
		p.raw[string(text)] = i
	}
	return p.record(i, text, ts, t, v)
}

// seen returns the index of the series written as text, if seen before:
// the last line's, else the one the map holds, which becomes the last.
func (p *parser) seen(text []byte) (int, bool) {
	if p.lastIdx >= 0 && bytes.Equal(text, p.lastText) {
		return p.lastIdx, true
	}
	i, ok := p.raw[string(text)]
	if ok {
		p.lastText, p.lastIdx = append(p.lastText[:0], text...), i
	}
	return i, ok
}

// record adds a sample of series i, written as text, whose timestamp
// starts at byte ts.
func (p *parser) record(i int, text []byte, ts int, t int64, v float64) error {
	s := p.series.at(i)
	if s.n > 0 && t <= s.last {
		return p.errorf(ts+1, "series %s: timestamp %s is not after %s on line %d (OpenMetrics requires strictly increasing timestamps)",
			text, formatSeconds(t), formatSeconds(s.last), s.line)
	}
	p.times.add(t)
	if s.keep {
		p.add(s, usage.Sample{T: t, V: v})
	}
	s.last = t
	s.n++
	s.line = p.line
	return nil
}

// add keeps a sample of a kept series, if it falls in the window.
func (p *parser) add(s *series, x usage.Sample) {
	if s.n > 0 {
		if d := x.T - s.last; d != s.ivLen {
			s.flush()
			s.ivLen = d
		}
		s.ivRun++
	}
	k := &p.keep
	switch {
	case !k.window:
	case x.T < k.from:
		if s.ksm && !math.IsNaN(x.V) {
			s.carried, s.carry = x, true
		}
		return
	case x.T > k.to:
		return
	case s.carry:
		s.Samples = append(s.Samples, s.carried)
		s.carry = false
	}
	if len(s.Samples) == cap(s.Samples) {
		s.Samples = p.grow(s.Samples, x.T, s.ivLen)
	}
	s.Samples = append(s.Samples, x)
	p.hint = len(s.Samples)
}

// grow returns room for more samples of a series whose next sample is at
// t, sized from what the file has shown so far, so that a series is
// allocated about once and memory stays close to the samples kept.
//
// A new series takes the previous one's length at once: series of a dump
// come one after the other, alike in length. The previous one, not the
// longest so far, so that one long series cannot make every later short
// one waste its room. A series that outgrows it doubles, as append would,
// unless the file's time so far says it needs less at its interval: a
// dump's later series end where the first ones did. Never more than
// doubling, so that no crafted interval can make a few samples take much
// room.
func (p *parser) grow(samples []usage.Sample, t, interval int64) []usage.Sample {
	n := len(samples)
	want := p.hint
	if n > 0 {
		want = 2 * n
		end := p.times.max
		if p.keep.window {
			end = min(end, p.keep.to)
		}
		if interval > 0 && end > t && (end-t)/interval < int64(n) {
			// The samples still to come at this interval, this one
			// included, and a few for a scrape that jitters.
			want = min(want, n+int((end-t)/interval)+1+growSlack)
		}
	}
	want = max(want, n+1, minGrow)
	out := make([]usage.Sample, n, want)
	copy(out, samples)
	return out
}

const (
	// minGrow is the least room a series is given: a sample is 16 bytes.
	minGrow = 4
	// growSlack is room for a few samples more than the interval says.
	growSlack = 2
)

// fit gives back the room a series was given and did not use, when it is
// more than an eighth: a series shorter than the one before it.
func fit(samples []usage.Sample) []usage.Sample {
	if cap(samples)-len(samples) <= len(samples)/8+minGrow {
		return samples
	}
	return slices.Clone(samples)
}

// flush counts the series' run of equal intervals.
func (s *series) flush() {
	if s.ivRun > 0 {
		s.intervals[s.ivLen] += int(s.ivRun)
		s.ivRun = 0
	}
}

// flushIntervals returns the intervals between samples of each kept
// metric, counted by length, as Set would count them from every sample.
func (p *parser) flushIntervals() map[string]map[int64]int {
	for i := range p.series.n {
		if s := p.series.at(i); s.keep {
			s.flush()
		}
	}
	return p.intervals
}

// lineOf returns the line of the first series' newest sample taken at t,
// 0 when none is.
func (p *parser) lineOf(t int64) int {
	for i := range p.series.n {
		if s := p.series.at(i); s.n > 0 && s.last == t {
			return s.line
		}
	}
	return 0
}

// exemplar checks the exemplar that follows a sample's timestamp at pos:
// ` # {labels} value [timestamp]`. Exemplars are not kept.
func (p *parser) exemplar(line []byte, pos int, name []byte) error {
	if !bytes.HasPrefix(line[pos:], []byte(" # {")) {
		return p.errorf(pos+1, "unexpected text after the timestamp (only an exemplar, ` # {...} value`, may follow)")
	}
	if !bytes.HasSuffix(name, []byte("_total")) && !bytes.HasSuffix(name, []byte("_bucket")) {
		return p.errorf(pos+2, "exemplar on %s (OpenMetrics allows exemplars only on counters, _total, and histogram buckets, _bucket)", name)
	}
	var err error
	start := len(p.spans)
	if pos, p.spans, err = p.labels(line, pos+4, p.spans); err != nil {
		return err
	}
	for _, s := range p.spans[start:] {
		if !utf8.Valid(line[s.val[0]:s.val[1]]) {
			return p.errorf(s.val[0]+1, "exemplar label value is not valid UTF-8")
		}
	}
	p.spans = p.spans[:start]
	if pos == len(line) || line[pos] != ' ' {
		return p.errorf(pos+1, "expected a space and the exemplar value")
	}
	vs, ve := pos+1, token(line, pos+1)
	if _, ok := parseValue(line[vs:ve]); !ok {
		return p.errorf(vs+1, "invalid exemplar value %q", line[vs:ve])
	}
	if ve == len(line) {
		return nil
	}
	ts, te := ve+1, token(line, ve+1)
	if _, ok := parseTimestamp(line[ts:te]); !ok {
		return p.errorf(ts+1, "invalid exemplar timestamp %q", line[ts:te])
	}
	if te < len(line) {
		return p.errorf(te+1, "unexpected text after the exemplar")
	}
	return nil
}

// labels scans a label set from just after its '{' and returns the position
// after its '}'. It checks the syntax only; newSeries checks the rest once
// per distinct series.
func (p *parser) labels(line []byte, pos int, spans []labelSpan) (int, []labelSpan, error) {
	if pos < len(line) && line[pos] == '}' {
		return pos + 1, spans, nil
	}
	for first := true; ; first = false {
		n := scanLabelName(line[pos:])
		if n == 0 {
			if first {
				return 0, nil, p.errorf(pos+1, "expected a label name or '}'")
			}
			return 0, nil, p.errorf(pos+1, "expected a label name after ','")
		}
		s := labelSpan{name: [2]int{pos, pos + n}}
		pos += n
		if pos == len(line) || line[pos] != '=' {
			return 0, nil, p.errorf(pos+1, "expected '=' after label name %s", line[s.name[0]:s.name[1]])
		}
		pos++
		if pos == len(line) || line[pos] != '"' {
			return 0, nil, p.errorf(pos+1, "expected a double-quoted label value")
		}
		pos++
		s.val[0] = pos
		for ; pos < len(line) && line[pos] != '"'; pos++ {
			if line[pos] != '\\' {
				continue
			}
			if pos+1 == len(line) {
				pos = len(line)
				break
			}
			switch line[pos+1] {
			case '\\', '"', 'n':
				s.escaped = true
				pos++
			default:
				return 0, nil, p.errorf(pos+1, `invalid escape %q in label value (only \\, \" and \n are allowed)`, "\\"+firstRune(line[pos+1:]))
			}
		}
		if pos == len(line) {
			return 0, nil, p.errorf(s.val[0], "unterminated label value")
		}
		s.val[1] = pos
		spans = append(spans, s)
		pos++
		switch {
		case pos < len(line) && line[pos] == '}':
			return pos + 1, spans, nil
		case pos < len(line) && line[pos] == ',':
			pos++
		default:
			return 0, nil, p.errorf(pos+1, "expected ',' or '}' after a label value")
		}
	}
}

// newSeries resolves a series text seen for the first time to a series,
// new or not, after the checks that only need doing once per text.
func (p *parser) newSeries(line []byte, nameLen int) (int, error) {
	for i, s := range p.spans {
		name := line[s.name[0]:s.name[1]]
		if string(name) == "__name__" {
			return 0, p.errorf(s.name[0]+1, "duplicate label name %q (it holds the metric name)", name)
		}
		for _, o := range p.spans[:i] {
			if bytes.Equal(name, line[o.name[0]:o.name[1]]) {
				return 0, p.errorf(s.name[0]+1, "duplicate label name %q", name)
			}
		}
		if !utf8.Valid(line[s.val[0]:s.val[1]]) {
			return 0, p.errorf(s.val[0]+1, "label value is not valid UTF-8")
		}
	}
	ls := make([]metrics.Label, 0, len(p.spans))
	for _, s := range p.spans {
		if s.val[0] == s.val[1] {
			continue
		}
		v := line[s.val[0]:s.val[1]]
		if s.escaped {
			v = unescape(v)
		}
		ls = append(ls, metrics.Label{Name: p.intern(line[s.name[0]:s.name[1]]), Value: p.intern(v)})
	}
	metrics.SortLabels(ls)
	name := p.intern(line[:nameLen])

	// Label names are ASCII and values valid UTF-8, so 0xff separates
	// them unambiguously.
	k := append(p.key[:0], name...)
	for _, l := range ls {
		k = append(k, 0xff)
		k = append(k, l.Name...)
		k = append(k, 0xff)
		k = append(k, l.Value...)
	}
	p.key = k
	if i, ok := p.canon[string(k)]; ok {
		return i, nil
	}
	s := series{Series: metrics.Series{Metric: name, Labels: ls}, ksm: slices.Contains(p.ksm, name)}
	if s.keep = p.keep.metrics == nil || p.keep.metrics[name]; s.keep {
		if s.intervals = p.intervals[name]; s.intervals == nil {
			s.intervals = make(map[int64]int)
			p.intervals[name] = s.intervals
		}
	}
	i := p.series.add(s)
	p.canon[string(k)] = i
	return i, nil
}

// seriesBlock is how many series a block of seriesStore holds.
const seriesBlock = 1024

// seriesStore holds the parser's series in blocks that never move. One
// slice of them, grown by copying, allocated 33 MB for a recording of
// 50,000 series (three times what they hold), a tenth of reading it.
type seriesStore struct {
	blocks [][]series
	n      int
}

// at returns series i, which stays where it is while more are added.
func (st *seriesStore) at(i int) *series {
	return &st.blocks[i/seriesBlock][i%seriesBlock]
}

// add appends s and returns its index.
func (st *seriesStore) add(s series) int {
	if st.n%seriesBlock == 0 {
		st.blocks = append(st.blocks, make([]series, 0, seriesBlock))
	}
	b := &st.blocks[len(st.blocks)-1]
	*b = append(*b, s)
	st.n++
	return st.n - 1
}

func (p *parser) intern(b []byte) string {
	if s, ok := p.strs[string(b)]; ok {
		return s
	}
	s := string(b)
	p.strs[s] = s
	return s
}

// unescape resolves the escapes labels already checked: \\, \" and \n.
func unescape(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == '\\' && i+1 < len(b) {
			i++
			c = b[i]
			if c == 'n' {
				c = '\n'
			}
		}
		out = append(out, c)
	}
	return out
}

// scanMetricName returns the length of the metric name, [a-zA-Z_:][a-zA-Z0-9_:]*,
// at the start of b.
func scanMetricName(b []byte) int {
	i := 0
	for ; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || i > 0 && c >= '0' && c <= '9') {
			break
		}
	}
	return i
}

// scanLabelName returns the length of the label name, [a-zA-Z_][a-zA-Z0-9_]*,
// at the start of b.
func scanLabelName(b []byte) int {
	i := 0
	for ; i < len(b); i++ {
		c := b[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || i > 0 && c >= '0' && c <= '9') {
			break
		}
	}
	return i
}

// token returns the end of the space-delimited token starting at pos.
func token(line []byte, pos int) int {
	if i := bytes.IndexByte(line[pos:], ' '); i >= 0 {
		return pos + i
	}
	return len(line)
}

// firstRune returns the first character of b for an error message.
func firstRune(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	_, n := utf8.DecodeRune(b)
	return string(b[:n])
}

// formatSeconds renders Unix milliseconds as seconds, as a file writes them.
func formatSeconds(ms int64) string {
	sign := ""
	u := uint64(ms)
	if ms < 0 {
		sign, u = "-", uint64(-ms)
	}
	return sign + strconv.FormatUint(u/1000, 10) + "." + fmt.Sprintf("%03d", u%1000)
}
