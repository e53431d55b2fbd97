package prometheus

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// answer is one response of the query API, decoded as it streams in: the
// envelope, and a matrix result straight into series, so that memory holds
// the samples (16 bytes each) and never the body.
type answer struct {
	status, errorType, errorMsg string
	warnings                    []string
	resultType                  string
	// series are the answer's series, one for each in the answer, when
	// it is decoded alone; decoded into a table, they are the table's.
	series []metrics.Series
	// size is the body's bytes, decompressed, and those of its lists of
	// samples: what the next request of a fetch is sized by.
	size answerSize
	// bad says why the result is no matrix of samples, "" when it is one;
	// it matters only when the status is not "error" and the type is
	// "matrix", as for encoding/json into the client's types before.
	bad string
}

// decoder reads one JSON value from a stream, through a buffer of its own
// (the body is read once, never held whole). It accepts only what
// encoding/json accepts, and decodes what it keeps as encoding/json
// decoded it into the client library's types, keys matched as
// encoding/json matches them (case folded, bytes.EqualFold); it refuses a
// key given twice, which encoding/json would take the last of and no
// server writes, and a null where a series or a sample should be.
type decoder struct {
	r        io.Reader
	buf      []byte
	pos, end int
	// err is the read error that ended the input, io.EOF at its end.
	err error
	// read counts the bytes read, decompressed.
	read int64
	// until is the newest time asked for, in Unix ms (of the whole
	// fetch when decoding into a table), and hint the room the previous
	// series was given: what a series' samples are sized by.
	until int64
	hint  int
	// ahead is the room the series of this answer keep beyond twice
	// their samples, in samples: at most aheadLimit (maxAheadSamples),
	// whatever the times say.
	ahead, aheadLimit int
	// strs interns label names and values: a few hundred distinct ones
	// label thousands of series.
	strs map[string]string
	// seen is room for the label names of the series being read.
	seen []string
	// sampleBytes counts the bytes of the answer's lists of samples: the
	// rest (labels, envelope) does not grow with the range asked for.
	sampleBytes int64
	// tbl, when set, is where the series go: each series' samples are
	// appended after those the earlier answers of the fetch brought.
	tbl *seriesTable
	// inTable says the samples being read are a series of tbl: their
	// room is carved from its slab.
	inTable bool
	// st is the element stream reads, and elementFields its members,
	// made once: made for each element, they were most of its
	// allocations.
	st            element
	elementFields []field
}

// decodeBufferSize is the decoder's read buffer; a longer token grows it,
// up to maxTokenBytes.
const decodeBufferSize = 64 << 10

// maxTokenBytes bounds one string or number of an answer, and so the
// decoder's buffer: whatever an answer holds, decoding it takes its
// samples and this. Prometheus writes no token near it; a gzip bomb of
// one label value would otherwise grow the buffer to the answer's bound,
// four answers at a time.
const maxTokenBytes = 4 << 20

// errTokenTooLong is a string or number longer than maxTokenBytes.
var errTokenTooLong = fmt.Errorf("%w: a string or number longer than %d MiB", errSyntax, maxTokenBytes>>20)

// maxDepth bounds the nesting of a value skipped, as encoding/json's.
const maxDepth = 10000

// errSyntax marks input that is not JSON, or not the API's JSON.
var errSyntax = errors.New("invalid JSON")

func newDecoder(r io.Reader, until int64, tbl *seriesTable) *decoder {
	d := &decoder{r: r, buf: make([]byte, decodeBufferSize), until: until, tbl: tbl, aheadLimit: maxAheadSamples}
	if tbl != nil && tbl.aheadLimit > 0 {
		d.aheadLimit = tbl.aheadLimit
	}
	if tbl != nil {
		d.strs = tbl.strs
	} else {
		d.strs = make(map[string]string)
	}
	return d
}

// decodeAnswer reads a whole response body: one object, then only
// whitespace. A read error (a body cut short, too long, a timeout) is
// returned as is, wrapped, so that the caller can tell it from bad JSON.
func decodeAnswer(r io.Reader, until int64) (*answer, error) {
	return decodeInto(r, until, nil)
}

// decodeInto is decodeAnswer with the series going into tbl when it is
// set; the caller undoes what a failed answer put there.
func decodeInto(r io.Reader, until int64, tbl *seriesTable) (*answer, error) {
	d := newDecoder(r, until, tbl)
	a := &answer{}
	defer func() { a.size = answerSize{bytes: d.read, samples: d.sampleBytes} }()
	if err := d.envelope(a); err != nil {
		return nil, err
	}
	if d.skipSpace() {
		return nil, d.syntax("data after the answer")
	}
	if !errors.Is(d.err, io.EOF) {
		return nil, d.readError()
	}
	return a, nil
}

// readError is what ended the input early: the read error, or the end of
// the input in the middle of a value.
func (d *decoder) readError() error {
	if d.err == nil || errors.Is(d.err, io.EOF) {
		return fmt.Errorf("%w: unexpected end of the answer", errSyntax)
	}
	return fmt.Errorf("read answer: %w", d.err)
}

// syntax is a syntax error, or the read error or the input's end if
// that is what came instead of the rest.
func (d *decoder) syntax(what string) error {
	if d.err != nil && (d.pos == d.end || !errors.Is(d.err, io.EOF)) {
		return d.readError()
	}
	return fmt.Errorf("%w: %s", errSyntax, what)
}

// more reads more input after buf[pos:end], moving that to the front; it
// returns false when no byte came.
func (d *decoder) more() bool {
	if d.err != nil {
		return false
	}
	if d.pos > 0 {
		d.end = copy(d.buf, d.buf[d.pos:d.end])
		d.pos = 0
	}
	if d.end == len(d.buf) {
		if len(d.buf) >= maxTokenBytes {
			d.err = errTokenTooLong
			return false
		}
		d.buf = append(d.buf, make([]byte, len(d.buf))...)
	}
	for {
		n, err := d.r.Read(d.buf[d.end:])
		d.end += n
		d.read += int64(n)
		if err != nil {
			d.err = err
		}
		if n > 0 || err != nil {
			return n > 0
		}
	}
}

// skipSpace skips whitespace and reports whether a byte follows.
func (d *decoder) skipSpace() bool {
	for {
		for d.pos < d.end {
			switch d.buf[d.pos] {
			case ' ', '\t', '\n', '\r':
				d.pos++
			default:
				return true
			}
		}
		if !d.more() {
			return false
		}
	}
}

// peek returns the next byte after whitespace, 0 at the end.
func (d *decoder) peek() byte {
	if !d.skipSpace() {
		return 0
	}
	return d.buf[d.pos]
}

// consume takes byte c after whitespace.
func (d *decoder) consume(c byte) error {
	if d.peek() != c {
		return d.syntax(fmt.Sprintf("expected %q", c))
	}
	d.pos++
	return nil
}

// each runs f on each element of the array or member of the object that
// starts here (open is '[' or '{'); for an object, key is the member's
// name, raw and valid until f returns.
func (d *decoder) each(open byte, f func(key []byte) error) error {
	if err := d.consume(open); err != nil {
		return err
	}
	closing := byte(']')
	if open == '{' {
		closing = '}'
	}
	if d.peek() == closing {
		d.pos++
		return nil
	}
	for {
		var key []byte
		if open == '{' {
			k, err := d.stringToken()
			if err != nil {
				return err
			}
			key = k
			if d.pos < d.end && d.buf[d.pos] == ':' {
				d.pos++
			} else {
				// Reading on to the colon may move the buffer's
				// bytes, the key's among them.
				key = bytes.Clone(k)
				if err := d.consume(':'); err != nil {
					return err
				}
			}
		}
		if err := f(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case closing:
			d.pos++
			return nil
		default:
			return d.syntax(fmt.Sprintf("expected ',' or %q", closing))
		}
	}
}

// field is a member of an object the decoder reads, by its name.
type field struct {
	name string
	read func() error
}

// members runs the field of fields whose name matches a member's key (as
// encoding/json matches them, case folded) on its value, and skips the
// value of any other member. A field given twice is refused. Fields are a
// list, not a map: an object is read per series, and a map each was most
// of the cost of a series' labels.
func (d *decoder) members(fields ...field) error {
	var seen uint64
	return d.each('{', func(key []byte) error {
		for i, f := range fields {
			if !bytes.EqualFold(key, []byte(f.name)) {
				continue
			}
			if seen&(1<<i) != 0 {
				return fmt.Errorf("%w: %q given twice", errSyntax, f.name)
			}
			seen |= 1 << i
			return f.read()
		}
		return d.skip()
	})
}

// envelope reads the response object: status, error, warnings, data.
func (d *decoder) envelope(a *answer) error {
	return d.members(
		field{"status", func() error { return d.stringOrNull(&a.status) }},
		field{"errorType", func() error { return d.stringOrNull(&a.errorType) }},
		field{"error", func() error { return d.stringOrNull(&a.errorMsg) }},
		field{"warnings", func() error {
			if d.null() {
				a.warnings = nil
				return nil
			}
			a.warnings = a.warnings[:0]
			return d.each('[', func([]byte) error {
				var w string
				if err := d.stringOrNull(&w); err != nil {
					return err
				}
				a.warnings = append(a.warnings, w)
				return nil
			})
		}},
		field{"data", func() error {
			if d.null() {
				return nil
			}
			return d.data(a)
		}},
	)
}

// data reads the data object: the result type and the result.
func (d *decoder) data(a *answer) error {
	result := false
	err := d.members(
		field{"resultType", func() error { return d.stringOrNull(&a.resultType) }},
		field{"result", func() error {
			result = true
			if d.null() {
				return nil
			}
			if d.peek() != '[' {
				a.bad = "the result is not a list"
				return d.skip()
			}
			return d.each('[', func([]byte) error { return d.stream(a) })
		}},
	)
	if !result && a.bad == "" {
		a.bad = "the answer has no result"
	}
	return err
}

// stream reads one element of a matrix result: a series' labels and its
// samples. Decoding into a table, the samples go straight into the
// table's series once its labels are known (Prometheus writes them
// first), after those of the earlier answers.
func (d *decoder) stream(a *answer) error {
	if d.peek() != '{' {
		a.bad = "a result is not an object"
		return d.skip()
	}
	d.st = element{a: a}
	st := &d.st
	if d.tbl != nil {
		// The labels are kept only by a series new to the table, which
		// copies them.
		st.s.Labels = d.tbl.labels[:0]
		defer func() { d.tbl.labels = st.s.Labels[:0] }()
	}
	if d.elementFields == nil {
		d.elementFields = []field{{"metric", d.elementMetric}, {"values", d.elementValues}}
	}
	if err := d.members(d.elementFields...); err != nil {
		return err
	}
	metrics.SortLabels(st.s.Labels)
	if d.tbl == nil {
		st.s.Samples = fit(st.s.Samples)
		d.hint = ahead(st.s.Samples, d.until)
		a.series = append(a.series, st.s)
		return nil
	}
	into := st.into
	if into == nil {
		// The samples came before the labels: added as they are.
		into = st.known
		if into == nil {
			into = d.tbl.series(&st.s)
		}
		into.Samples = append(into.Samples, st.s.Samples...)
	}
	d.inTable = true
	into.Samples = d.budgeted(d.bounded(into.Samples))
	d.hint = ahead(into.Samples, d.until)
	return nil
}

// element is the element of a matrix result being read (stream).
type element struct {
	a *answer
	s metrics.Series
	// into is the table's series the samples go to, once known; known
	// is the one found by its label set as written (asWritten), and raw
	// that label set when it is new to the table.
	into, known *metrics.Series
	raw         []byte
	labelled    bool
}

// elementMetric reads the element's labels.
func (d *decoder) elementMetric() error {
	st := &d.st
	st.labelled = true
	if d.null() {
		return nil
	}
	if d.peek() != '{' {
		st.a.bad = "a series' labels are not an object"
		return d.skip()
	}
	if st.known, st.raw = d.asWritten(); st.known != nil {
		return nil
	}
	err := d.labels(&st.s)
	metrics.SortLabels(st.s.Labels)
	return err
}

// elementValues reads the element's samples: into the table's series
// when its labels came first.
func (d *decoder) elementValues() error {
	st := &d.st
	target := &st.s
	if d.tbl != nil && st.labelled && st.a.bad == "" {
		st.into = st.known
		if st.into == nil {
			st.into = d.tbl.series(&st.s)
			d.tbl.noteRaw(st.raw, st.into)
		}
		target = st.into
	}
	if d.null() {
		return nil
	}
	if d.peek() != '[' {
		st.a.bad = "a series' samples are not a list"
		return d.skip()
	}
	d.inTable = target != &st.s
	return d.samples(st.a, target)
}

// asWritten finds the table's series by the label set that starts here,
// as the answer wrote it, and reads past it. Else it returns the label
// set's bytes, for noteRaw once they are parsed: nil when the buffer
// does not hold them whole.
func (d *decoder) asWritten() (*metrics.Series, []byte) {
	if d.tbl == nil {
		return nil, nil
	}
	n := flatObject(d.buf[d.pos:d.end])
	if n == 0 {
		return nil, nil
	}
	if x := d.tbl.raw[string(d.buf[d.pos:d.pos+n])]; x != nil {
		d.pos += n
		return x, nil
	}
	d.tbl.rawKey = append(d.tbl.rawKey[:0], d.buf[d.pos:d.pos+n]...)
	return nil, d.tbl.rawKey
}

// flatObject is the length of the object at the start of b, which holds
// strings alone (a label set as Prometheus writes it), or 0 when b ends
// first or the object holds anything else: a list or an object.
func flatObject(b []byte) int {
	in := false
	for i := 1; i < len(b); i++ {
		c := b[i]
		switch {
		case in && c == '\\':
			i++
		case in:
			in = c != '"'
		case c == '"':
			in = true
		case c == '}':
			return i + 1
		case c == '{' || c == '[':
			return 0
		}
	}
	return 0
}

// labels reads a series' label set: the metric name from __name__, the
// others as labels, without those whose value is empty (the same as no
// label, and what the recording's parser drops too).
func (d *decoder) labels(s *metrics.Series) error {
	d.seen = d.seen[:0]
	return d.each('{', func(key []byte) error {
		name, err := d.intern(key)
		if err != nil {
			return err
		}
		if slices.Contains(d.seen, name) {
			return fmt.Errorf("%w: label %q given twice", errSyntax, name)
		}
		d.seen = append(d.seen, name)
		raw, err := d.stringToken()
		if err != nil {
			return err
		}
		value, err := d.intern(raw)
		if err != nil {
			return err
		}
		switch {
		case name == "__name__":
			s.Metric = value
		case value != "":
			s.Labels = append(s.Labels, metrics.Label{Name: name, Value: value})
		}
		return nil
	})
}

// samples appends a series' [time, "value"] pairs to its samples, sized
// from the answer: the room the previous series was given, then, once
// outgrown, what the time left up to the newest time asked for says at
// the series' interval, never more than aheadFactor times its samples.
// Samples written as Prometheus writes them are read by fastPair in a
// loop of their own: they are almost every byte of an answer. It counts
// the bytes of the list, which size the next request (sizing).
func (d *decoder) samples(a *answer, s *metrics.Series) error {
	start := d.offset()
	defer func() { d.sampleBytes += d.offset() - start }()
	if err := d.consume('['); err != nil {
		return err
	}
	if d.peek() == ']' {
		d.pos++
		return nil
	}
	xs := s.Samples
	defer func() { s.Samples = xs }()
	for {
		if d.end-d.pos < fastPairBytes {
			// A gzip reader hands over little at a time: have a whole
			// sample in the buffer for the fast path.
			d.more()
		}
		x, ok := usage.Sample{}, false
		if d.pos < d.end && d.buf[d.pos] == '[' {
			x, ok = d.fastPair()
		}
		if !ok {
			var bad string
			var err error
			if x, bad, err = d.pair(); err != nil {
				return err
			}
			if bad != "" {
				a.bad = bad
			} else {
				ok = true
			}
		}
		if ok {
			if len(xs) == cap(xs) {
				xs = d.grow(xs, x.T)
			}
			xs = append(xs, x)
		}
		c := byte(0)
		if d.pos < d.end {
			c = d.buf[d.pos]
		}
		if c != ',' && c != ']' {
			c = d.peek()
		}
		switch c {
		case ',':
			d.pos++
		case ']':
			d.pos++
			return nil
		default:
			return d.syntax("expected ',' or ']'")
		}
	}
}

// offset is how many bytes of the input were read up to pos.
func (d *decoder) offset() int64 { return d.read - int64(d.end-d.pos) }

// grow returns room for more samples of a series whose next is at t:
// what the time left up to until says at its interval, more than
// doubling if need be but never more than aheadFactor times its samples;
// doubling when the time says nothing.
func (d *decoder) grow(samples []usage.Sample, t int64) []usage.Sample {
	n := len(samples)
	want := d.hint
	if n > 0 {
		want = 2 * n
		if interval := t - samples[n-1].T; interval > 0 && d.until > t {
			want = roomLeft(n, (d.until-t)/interval)
		}
	}
	return d.resize(samples, max(want, n+1, minGrow))
}

// resize returns samples with room for c, c ≥ len(samples): from the
// table's slab for the series of the table, else allocated alone.
func (d *decoder) resize(samples []usage.Sample, c int) []usage.Sample {
	if d.inTable {
		return d.tbl.room.resize(samples, c)
	}
	out := make([]usage.Sample, len(samples), c)
	copy(out, samples)
	return out
}

// roomLeft is room for n samples and left more, and a few to spare,
// never more than aheadFactor times n.
func roomLeft(n int, left int64) int {
	if left >= int64((aheadFactor-1)*n) {
		return aheadFactor * n
	}
	return n + int(left) + 1 + growSlack
}

// ahead is the room a series of these samples takes for the rest of the
// time asked for, up to until, at its last interval (roomLeft): the room
// the next series is first given.
func ahead(samples []usage.Sample, until int64) int {
	n := len(samples)
	if n < 2 {
		return n
	}
	last := samples[n-1].T
	interval := last - samples[n-2].T
	if interval <= 0 || until <= last {
		return n
	}
	return roomLeft(n, (until-last)/interval)
}

// bounded gives back the room of a series beyond aheadFactor times its
// samples: what a series was first given from the series before it, so
// that a few samples never hold much room from one answer to the next.
func (d *decoder) bounded(samples []usage.Sample) []usage.Sample {
	if cap(samples) <= aheadFactor*len(samples)+minGrow {
		return samples
	}
	return d.resize(samples, max(ahead(samples, d.until), len(samples)))
}

const (
	// minGrow is the least room a series is given: a sample is 16 bytes.
	minGrow = 4
	// growSlack is room for a few samples more than the interval says.
	growSlack = 2
	// aheadFactor bounds the room a series is given ahead, in times its
	// samples so far: enough for the rest of a day after its first 15
	// minutes (firstPiece), in one allocation. What a server can make a
	// few samples take is bounded by the answer's budget
	// (maxAheadSamples); a bound of 8, with that short first piece,
	// copied each series three times on the way to a day.
	aheadFactor = int(chunk / firstPiece)
	// maxAheadSamples bounds the room one answer's series keep beyond
	// doubling, all together: twice the samples an answer's body may hold
	// (each takes more than 16 bytes of JSON), so that the times a server
	// writes cannot make an answer's room more than 256 MiB beyond twice
	// its samples. The second piece of a day of a large fleet keeps room
	// for the rest of the day, about three times its samples beyond
	// doubling: a bound of one body's samples gave it back (peak RSS
	// 1.46× the samples kept in make bench-e2e's Prometheus row, 1.31×
	// with this one).
	maxAheadSamples = maxResponseBytes / 8
)

// budgeted counts the room samples keep beyond twice their length
// against the answer's bound, and gives it back once the bound is
// reached: the times a server writes can make one answer's series keep
// at most maxAheadSamples more than doubling would.
func (d *decoder) budgeted(samples []usage.Sample) []usage.Sample {
	extra := cap(samples) - 2*len(samples) - minGrow
	if extra <= 0 {
		return samples
	}
	if d.ahead+extra <= d.aheadLimit {
		d.ahead += extra
		return samples
	}
	return d.resize(samples, 2*len(samples)+minGrow)
}

// fit gives back the room a series was given and did not use, when it is
// more than an eighth: a series shorter than the one before it.
func fit(samples []usage.Sample) []usage.Sample {
	if cap(samples)-len(samples) <= len(samples)/8+minGrow {
		return samples
	}
	return append([]usage.Sample(nil), samples...)
}

// pair reads one [time, "value"] sample: the time a number of seconds
// with up to millisecond precision (digits past it are dropped), the value
// a string strconv.ParseFloat reads, as Prometheus writes them. What is
// JSON but no sample (another shape, a time out of range) is bad, not an
// error: it only matters if the answer claims to be a matrix.
func (d *decoder) pair() (x usage.Sample, bad string, err error) {
	const shape = `a sample is not [time, "value"]`
	if d.peek() != '[' {
		return x, shape, d.skip()
	}
	d.pos++
	if d.peek() == ']' {
		d.pos++
		return x, shape, nil
	}
	for n := 1; ; n++ {
		c := d.peek()
		switch {
		case n == 1 && (c == '-' || '0' <= c && c <= '9'):
			num, err := d.numberToken()
			if err != nil {
				return x, "", err
			}
			t, ok := parseSeconds(num)
			if !ok && bad == "" {
				bad = fmt.Sprintf("sample time %s is out of range or not in seconds", num)
			}
			x.T = t
		case n == 2 && c == '"':
			raw, err := d.stringToken()
			if err != nil {
				return x, "", err
			}
			v, perr := strconv.ParseFloat(string(raw), 64)
			if perr != nil && bad == "" {
				bad = fmt.Sprintf("sample value %q is not a number", raw)
			}
			x.V = v
		default:
			if bad == "" {
				bad = shape
			}
			if err := d.skip(); err != nil {
				return x, "", err
			}
		}
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			if n != 2 && bad == "" {
				bad = shape
			}
			return x, bad, nil
		default:
			return x, "", d.syntax("expected ',' or ']'")
		}
	}
}

// fastPairBytes is room for a sample as Prometheus writes it, with a
// value of full precision: [1700000000.123,"-1.2345678901234567e-308"].
const fastPairBytes = 64

// fastPair reads a sample written as Prometheus writes it, with no space
// and a time of at most 15 digits of seconds (and up to millisecond
// digits after a point), from what the buffer holds: the sample is almost
// every byte of an answer. It reads nothing, and is not ok, when the
// sample is written any other way or crosses the buffer's end; pair then
// reads it, with the same result.
func (d *decoder) fastPair() (usage.Sample, bool) {
	b := d.buf[d.pos:d.end]
	ms, i, ok := fastTime(b)
	if !ok || i+1 >= len(b) || b[i] != ',' || b[i+1] != '"' {
		return usage.Sample{}, false
	}
	i += 2
	start := i
	for i < len(b) && b[i] != '"' {
		if b[i] < 0x20 || b[i] == '\\' {
			return usage.Sample{}, false
		}
		i++
	}
	if i+1 >= len(b) || b[i+1] != ']' {
		return usage.Sample{}, false
	}
	v, ok := sampleValue(b[start:i])
	if !ok {
		return usage.Sample{}, false
	}
	d.pos += i + 2
	return usage.Sample{T: ms, V: v}, true
}

// fastTime reads the time of the sample that starts b (b[0] is '['), for
// fastPair: in Unix ms, and the index past it. It is not ok for a time
// written any other way than fastPair reads.
func fastTime(b []byte) (ms int64, i int, ok bool) {
	i = 1
	// Times to 2286 have ten digits of seconds: the first eight are read
	// at once. Digit by digit, the time was 5 % of the client's CPU.
	if len(b) > 9 {
		if v, ok := eightDigits(b[1:9]); ok {
			ms, i = int64(v), 9
		}
	}
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		ms = ms*10 + int64(b[i]-'0')
		i++
	}
	if digits := i - 1; digits == 0 || digits > 15 || digits > 1 && b[1] == '0' {
		return 0, 0, false
	}
	scale := int64(1000)
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			if scale > 1 {
				scale /= 10
				ms = ms*10 + int64(b[i]-'0')
			}
			i++
		}
		if i == start {
			return 0, 0, false
		}
	}
	return ms * scale, i, true
}

// eightDigits reads b[:8] as a decimal number when all eight bytes are
// ASCII digits, eight bytes a word: a byte c is a digit when the high
// halves of c and c+6 are both 3, and the digits are joined in pairs,
// then fours, then all eight, each step one multiplication. A byte past
// 0xf9 carries into the next byte's sum but fails the check itself.
func eightDigits(b []byte) (uint64, bool) {
	v := binary.LittleEndian.Uint64(b)
	if v&(v+0x0606060606060606)&0xf0f0f0f0f0f0f0f0 != 0x3030303030303030 {
		return 0, false
	}
	v -= 0x3030303030303030
	// b[0], the first digit, is the low byte.
	v = (v*10 + v>>8) & 0x00ff00ff00ff00ff
	v = (v*100 + v>>16) & 0x0000ffff0000ffff
	v = (v*10000 + v>>32) & 0xffffffff
	return v, true
}

// sampleValue reads a sample's value: by parseValue when it is plain,
// else by strconv.ParseFloat.
func sampleValue(b []byte) (float64, bool) {
	if v, ok := parseValue(b); ok {
		return v, true
	}
	v, err := strconv.ParseFloat(string(b), 64)
	return v, err == nil
}

// parseValue reads a plain decimal, -?[0-9]+(\.[0-9]+)?, of fewer than
// 2^52 in its digits, as strconv.ParseFloat does: the integer of its
// digits and the power of ten are exact in a float64, so their quotient
// is the correctly rounded value, which ParseFloat returns too. It is not
// ok for anything else (NaN, Inf, an exponent, more digits): ParseFloat
// reads those. Most values Prometheus writes are plain, and ParseFloat's
// general path was a fifth of decoding.
func parseValue(b []byte) (float64, bool) {
	i := 0
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		i++
	}
	var mant uint64
	digits, frac := 0, -1
	for ; i < len(b); i++ {
		c := b[i]
		switch {
		case '0' <= c && c <= '9':
			if digits == 18 {
				return 0, false
			}
			mant = mant*10 + uint64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		case c == '.' && frac < 0 && digits > 0:
			frac = 0
		default:
			return 0, false
		}
	}
	if digits == 0 || frac == 0 || mant>>52 != 0 || frac > 22 {
		return 0, false
	}
	f := float64(mant)
	if frac > 0 {
		f /= pow10(frac)
	}
	if neg {
		f = -f
	}
	return f, true
}

// pow10 is 10^n, exact for n ≤ 22: each product is one a float64 holds.
func pow10(n int) float64 {
	p := 1.0
	for range n {
		p *= 10
	}
	return p
}

// parseSeconds reads a JSON number of seconds as Unix milliseconds,
// digits past the millisecond dropped, as the client library read it
// (model.Time); an exponent, or a time past the int64 milliseconds, is
// refused.
func parseSeconds(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	ms := int64(0)
	digits := 0
	frac := -1
	for _, c := range b {
		switch {
		case c == '.':
			frac = 0
		case c < '0' || c > '9':
			return 0, false
		case frac >= 3:
		default:
			if ms > (math.MaxInt64-9)/10 {
				return 0, false
			}
			ms = ms*10 + int64(c-'0')
			digits++
			if frac >= 0 {
				frac++
			}
		}
	}
	for frac = max(frac, 0); frac < 3; frac++ {
		if ms > math.MaxInt64/10 {
			return 0, false
		}
		ms *= 10
	}
	if neg {
		ms = -ms
	}
	return ms, digits > 0
}

// stringOrNull reads a string into *s; null leaves it as it is.
func (d *decoder) stringOrNull(s *string) error {
	if d.null() {
		return nil
	}
	raw, err := d.stringToken()
	if err != nil {
		return err
	}
	*s, err = d.unquote(raw)
	return err
}

// null takes a null, if one comes next.
func (d *decoder) null() bool {
	if d.peek() != 'n' {
		return false
	}
	lit, err := d.literal()
	return err == nil && string(lit) == "null"
}

// intern returns a string's value, the same string for the same value.
func (d *decoder) intern(raw []byte) (string, error) {
	if s, ok := d.strs[string(raw)]; ok {
		return s, nil
	}
	s, err := d.unquote(raw)
	if err != nil {
		return "", err
	}
	d.strs[string(raw)] = s
	return s, nil
}

// unquote decodes a string token's content, checked already: as is when
// it is plain (no escape, valid UTF-8), else through encoding/json, so that
// escapes and invalid UTF-8 read exactly as before.
func (d *decoder) unquote(raw []byte) (string, error) {
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw), nil
	}
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(append(append(quoted, '"'), raw...), '"')
	var s string
	if err := json.Unmarshal(quoted, &s); err != nil {
		return "", fmt.Errorf("%w: %w", errSyntax, err)
	}
	return s, nil
}

// stringToken reads a string after whitespace and returns its content
// between the quotes, escapes checked and left as written; it is valid
// until the next read.
func (d *decoder) stringToken() ([]byte, error) {
	if d.peek() != '"' {
		return nil, d.syntax("expected a string")
	}
	i := d.pos + 1
	for {
	scan:
		for i < d.end {
			c := d.buf[i]
			switch {
			case c == '"':
				raw := d.buf[d.pos+1 : i]
				d.pos = i + 1
				return raw, nil
			case c < 0x20:
				return nil, d.syntax("control character in a string")
			case c == '\\':
				n, ok := d.escape(i)
				if !ok {
					return nil, d.syntax("invalid escape in a string")
				}
				if n == 0 {
					break scan
				}
				i += n
			default:
				i++
			}
		}
		off := i - d.pos
		if !d.more() {
			return nil, d.readError()
		}
		i = d.pos + off
	}
}

// escape checks the escape at buf[i] and returns its length, 0 when the
// buffer ends first.
func (d *decoder) escape(i int) (int, bool) {
	if i+1 >= d.end {
		return 0, true
	}
	switch d.buf[i+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2, true
	case 'u':
		if i+6 > d.end {
			return 0, true
		}
		for _, c := range d.buf[i+2 : i+6] {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
				return 0, false
			}
		}
		return 6, true
	}
	return 0, false
}

// numberToken reads a number after whitespace, checked against JSON's
// grammar; it is valid until the next read.
func (d *decoder) numberToken() ([]byte, error) {
	tok, err := d.token(isNumberByte)
	if err != nil {
		return nil, err
	}
	if !validNumber(tok) {
		return nil, d.syntax(fmt.Sprintf("invalid number %q", tok))
	}
	return tok, nil
}

// literal reads true, false or null.
func (d *decoder) literal() ([]byte, error) {
	tok, err := d.token(func(c byte) bool { return 'a' <= c && c <= 'z' })
	if err != nil {
		return nil, err
	}
	switch string(tok) {
	case "true", "false", "null":
		return tok, nil
	}
	return nil, d.syntax(fmt.Sprintf("invalid literal %q", tok))
}

// token reads the bytes in from here after whitespace, at least one.
func (d *decoder) token(in func(byte) bool) ([]byte, error) {
	if !d.skipSpace() {
		return nil, d.readError()
	}
	i := d.pos
	for {
		for i < d.end && in(d.buf[i]) {
			i++
		}
		if i < d.end || d.err != nil {
			break
		}
		off := i - d.pos
		if !d.more() {
			i = d.pos + off
			break
		}
		i = d.pos + off
	}
	if d.err != nil && !errors.Is(d.err, io.EOF) && i == d.end {
		return nil, d.readError()
	}
	tok := d.buf[d.pos:i]
	if len(tok) == 0 {
		return nil, d.syntax("expected a value")
	}
	d.pos = i
	return tok, nil
}

func isNumberByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}

// validNumber reports whether b is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}

// skip reads a value of any kind and keeps nothing of it, checking it is
// JSON.
func (d *decoder) skip() error {
	return d.skipDepth(0)
}

func (d *decoder) skipDepth(depth int) error {
	if depth > maxDepth {
		return d.syntax("nested too deep")
	}
	switch c := d.peek(); {
	case c == '{' || c == '[':
		return d.each(c, func([]byte) error { return d.skipDepth(depth + 1) })
	case c == '"':
		_, err := d.stringToken()
		return err
	case c == '-' || '0' <= c && c <= '9':
		_, err := d.numberToken()
		return err
	case c == 't' || c == 'f' || c == 'n':
		_, err := d.literal()
		return err
	}
	return d.syntax("expected a value")
}

// seriesTable holds the series of one selector's fetch: each answer's
// samples of a series are appended after those of the answers before it,
// in the room that series was given, so that the pieces of a range are
// never held apart and copied together.
type seriesTable struct {
	index map[string]int
	list  []*metrics.Series
	key   []byte
	strs  map[string]string
	// raw finds a series by its label set as an answer wrote it: the
	// same bytes are the same labels, and each answer repeats them, so
	// that only the first answer's are parsed. rawKey is room for one.
	raw    map[string]*metrics.Series
	rawKey []byte
	// room is where the series' samples are kept.
	room slab
	// labels is room for the labels of the series being read.
	labels []metrics.Label
	// marks are the series and their lengths before the answer being
	// read, to undo a failed one: a try is tried again whole.
	markSeries int
	markLens   []int
	// aheadLimit, when set, bounds an answer's room beyond doubling in
	// place of maxAheadSamples (for tests).
	aheadLimit int
}

func newSeriesTable() *seriesTable {
	return &seriesTable{index: make(map[string]int), strs: make(map[string]string), raw: make(map[string]*metrics.Series)}
}

// series returns the table's series with the labels of s, added without
// samples if it is new. It is valid until the next call.
func (t *seriesTable) series(s *metrics.Series) *metrics.Series {
	t.key = seriesKey(t.key[:0], *s)
	if i, ok := t.index[string(t.key)]; ok {
		return t.list[i]
	}
	t.index[string(t.key)] = len(t.list)
	x := &metrics.Series{Metric: s.Metric, Labels: slices.Clone(s.Labels)}
	t.list = append(t.list, x)
	return x
}

// noteRaw notes that raw, a label set as written, names x; nil is none.
func (t *seriesTable) noteRaw(raw []byte, x *metrics.Series) {
	if raw != nil {
		t.raw[string(raw)] = x
	}
}

// mark notes the table as it is before an answer.
func (t *seriesTable) mark() {
	t.markSeries = len(t.list)
	t.markLens = t.markLens[:0]
	for _, s := range t.list {
		t.markLens = append(t.markLens, len(s.Samples))
	}
}

// undo puts the table back as it was at the mark.
func (t *seriesTable) undo() {
	for i, n := range t.markLens {
		t.list[i].Samples = t.list[i].Samples[:n]
	}
	for _, s := range t.list[t.markSeries:] {
		t.key = seriesKey(t.key[:0], *s)
		delete(t.index, string(t.key))
	}
	clear(t.list[t.markSeries:])
	t.list = t.list[:t.markSeries]
	// The series taken out may be among those raw names.
	clear(t.raw)
}
