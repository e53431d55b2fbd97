package prometheus_test

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// until is the newest time the test answers are asked for.
const until = 1_700_000_000_000

func TestDecodeAnswer(t *testing.T) {
	tests := []struct {
		name string
		body string
		want prometheus.Answer
		bad  string // a part of the reason the result is no matrix
		err  string // a part of the error
	}{
		{
			name: "a matrix: labels sorted, the name apart, empty values dropped, times to the millisecond",
			body: `{"status":"success","data":{"resultType":"matrix","result":[` +
				`{"metric":{"pod":"p-1","__name__":"gpu","namespace":"ml","container":""},"values":[[1699999999,"1"],[1699999999.5,"NaN"],[1700000000.1239,"+Inf"]]},` +
				`{"values":[[1700000000,"-2.5e3"]],"metric":{"__name__":"gpu"}}]}}`,
			want: prometheus.Answer{Status: "success", ResultType: "matrix", Series: []metrics.Series{
				{Metric: "gpu", Labels: []metrics.Label{{Name: "namespace", Value: "ml"}, {Name: "pod", Value: "p-1"}},
					Samples: []usage.Sample{{T: 1699999999000, V: 1}, {T: 1699999999500, V: math.NaN()}, {T: 1700000000123, V: math.Inf(1)}}},
				{Metric: "gpu", Samples: []usage.Sample{{T: 1700000000000, V: -2500}}},
			}},
		},
		{
			name: "whitespace anywhere, keys case folded as encoding/json folds them, unknown members skipped",
			body: " {\n\t\"STATUS\" : \"success\" , \"infos\":[{\"a\":[1,true,null]}], \"Data\":{\"resultType\":\"matrix\",\"stats\":{},\"result\":[ { \"metric\" : { \"a\\u0062c\" : \"\\\"x\\\"\" } , \"values\" : [ [ 1 , \"2\" ] ] } ]},\"warnings\":[\"w1\",\"w2\"]}\r\n",
			want: prometheus.Answer{Status: "success", ResultType: "matrix", Warnings: []string{"w1", "w2"}, Series: []metrics.Series{
				{Labels: []metrics.Label{{Name: "abc", Value: `"x"`}}, Samples: []usage.Sample{{T: 1000, V: 2}}},
			}},
		},
		{
			name: "an error answer",
			body: `{"status":"error","errorType":"execution","error":"query processing would load too many samples"}`,
			want: prometheus.Answer{Status: "error", ErrorType: "execution", Error: "query processing would load too many samples"},
		},
		{
			name: "a vector is read, and is no matrix",
			body: `{"status":"success","data":{"result":[{"metric":{},"value":[1,"1"]}],"resultType":"vector"}}`,
			want: prometheus.Answer{Status: "success", ResultType: "vector", Series: []metrics.Series{{}}},
		},
		{name: "a time with an exponent", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1e9,"1"]]}]}}`, bad: "sample time 1e9"},
		{name: "a time past int64 milliseconds", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[9223372036854776,"1"]]}]}}`, bad: "out of range"},
		{name: "a value that is no number", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"one"]]}]}}`, bad: `"one"`},
		{name: "a value not quoted", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,1]]}]}}`, bad: "not [time"},
		{name: "a sample of three", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"1",2]]}]}}`, bad: "not [time"},
		{name: "a scalar result", body: `{"status":"success","data":{"resultType":"scalar","result":[1,"1"]}}`, bad: "not an object"},
		{name: "a key given twice", body: `{"status":"success","status":"error"}`, err: `"status" given twice`},
		{name: "a label given twice", body: `{"data":{"result":[{"metric":{"a":"1","a":"2"}}]}}`, err: `label "a" given twice`},
		{name: "data after the answer", body: `{"status":"success"} {}`, err: "data after the answer"},
		{name: "cut short", body: `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1,"1"]`, err: "unexpected end"},
		{name: "not JSON", body: `<html>`, err: "invalid JSON"},
		{name: "a control character in a string", body: "{\"status\":\"a\tb\"}", err: "control character"},
		{name: "an invalid escape", body: `{"status":"\x"}`, err: "invalid escape"},
		{name: "an invalid number", body: `{"x":01}`, err: "invalid"},
		{name: "empty", body: ``, err: "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte a read: every token crosses a buffer's end.
			for _, r := range []io.Reader{strings.NewReader(tt.body), iotest.OneByteReader(strings.NewReader(tt.body)), &keySplitReader{rest: tt.body}} {
				got, err := prometheus.DecodeAnswer(r, until)
				if tt.err != "" {
					require.ErrorContains(t, err, tt.err)
					continue
				}
				require.NoError(t, err)
				if tt.bad != "" {
					require.Contains(t, got.Bad, tt.bad)
					continue
				}
				require.Empty(t, got.Bad)
				require.Equal(t, render(tt.want), render(got))
			}
		})
	}

	t.Run("a read error is returned as such", func(t *testing.T) {
		boom := errors.New("boom")
		_, err := prometheus.DecodeAnswer(io.MultiReader(strings.NewReader(`{"status":"succ`), iotest.ErrReader(boom)), until)
		require.ErrorIs(t, err, boom)
	})
}

// render writes an answer so that NaN compares equal to NaN.
// keySplitReader hands over its text in pieces that each end at an
// object key's closing quote: the decoder reads the next piece before the
// colon, and moves what it holds, the key included, to the front of its
// buffer. A key read before the move was once matched after it: a label
// from another series' bytes, its samples put into that series (4 of
// 20,000 series at 10,000 pods in BenchmarkE2EPrometheus).
type keySplitReader struct{ rest string }

func (r *keySplitReader) Read(p []byte) (int, error) {
	if r.rest == "" {
		return 0, io.EOF
	}
	n := len(r.rest)
	for i := 1; i < len(r.rest); i++ {
		if r.rest[i-1] == '"' && strings.TrimLeft(r.rest[i:], " \t\r\n")[0:1] == ":" {
			n = i
			break
		}
	}
	n = copy(p, r.rest[:n])
	r.rest = r.rest[n:]
	return n, nil
}

func render(a prometheus.Answer) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status %q errorType %q error %q warnings %q type %q bad %q\n", a.Status, a.ErrorType, a.Error, a.Warnings, a.ResultType, a.Bad)
	for _, s := range a.Series {
		fmt.Fprintf(&b, "%q %q:", s.Metric, s.Labels)
		for _, x := range s.Samples {
			fmt.Fprintf(&b, " %d=%s", x.T, strconv.FormatFloat(x.V, 'g', -1, 64))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// oracle is a response decoded by encoding/json, as the client library
// decoded it before the answers were streamed.
type oracle struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
	Warnings  []string        `json:"warnings"`
}

type oracleData struct {
	ResultType string          `json:"resultType"`
	Result     json.RawMessage `json:"result"`
}

type oracleStream struct {
	Metric map[string]string   `json:"metric"`
	Values [][]json.RawMessage `json:"values"`
}

// oracleMatrix decodes a matrix result with encoding/json, times converted
// exactly (math/big), values by strconv.ParseFloat of the quoted text as
// the client library read them; ok is false when it is no matrix.
func oracleMatrix(raw json.RawMessage) ([]metrics.Series, bool) {
	var ss []*oracleStream
	if len(raw) == 0 || json.Unmarshal(raw, &ss) != nil {
		return nil, false
	}
	var out []metrics.Series
	for _, st := range ss {
		if st == nil {
			// The client library's matrix held a nil series here.
			return nil, false
		}
		s := metrics.Series{Metric: st.Metric["__name__"]}
		for n, v := range st.Metric {
			if n != "__name__" && v != "" {
				s.Labels = append(s.Labels, metrics.Label{Name: n, Value: v})
			}
		}
		slices.SortFunc(s.Labels, func(a, b metrics.Label) int { return strings.Compare(a.Name, b.Name) })
		for _, p := range st.Values {
			if len(p) != 2 || len(p[1]) < 2 || p[1][0] != '"' || bytes.ContainsAny(p[0], "eE\"") {
				return nil, false
			}
			r, ok := new(big.Rat).SetString(string(p[0]))
			if !ok {
				return nil, false
			}
			ms := new(big.Int).Quo(new(big.Int).Mul(r.Num(), big.NewInt(1000)), r.Denom())
			if !ms.IsInt64() {
				return nil, false
			}
			v, err := strconv.ParseFloat(string(p[1][1:len(p[1])-1]), 64)
			if err != nil {
				return nil, false
			}
			s.Samples = append(s.Samples, usage.Sample{T: ms.Int64(), V: v})
		}
		out = append(out, s)
	}
	return out, true
}

// TestDecodeAnswerTokenBound: an answer whose one label value is as long
// as an answer may be (a gzip bomb expands to it in a moment) fails as
// bad JSON once the value passes 4 MiB, and decoding it allocates about
// that much: the decoder's buffer grew to the answer's bound before, four
// answers at a time.
func TestDecodeAnswerTokenBound(t *testing.T) {
	tests := []struct{ name, head, tail string }{
		{"a label value", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"a":"`, `"},"values":[]}]}}`},
		{"a number", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1`, `,"1"]]}]}}`},
		{"an error message", `{"status":"error","errorType":"bad_data","error":"`, `"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := io.MultiReader(strings.NewReader(tt.head), io.LimitReader(zeros{'1'}, 128<<20), strings.NewReader(tt.tail))
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := prometheus.DecodeAnswer(body, until)
			runtime.ReadMemStats(&after)
			require.ErrorContains(t, err, "invalid JSON: a string or number longer than 4 MiB")
			require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(16<<20), "bytes allocated decoding it")
		})
	}
}

// zeros reads its byte for ever.
type zeros struct{ b byte }

func (z zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = z.b
	}
	return len(p), nil
}

// FuzzDecodeAnswer holds the streaming decoder to encoding/json's decoding
// of the same bytes: whatever it accepts, encoding/json accepts and reads
// the same; and whatever encoding/json reads as a matrix, written again as
// a server writes it, it reads the same. Decoding into a table, as a
// fetch does, it reads the same series joined by label set.
func FuzzDecodeAnswer(f *testing.F) {
	for _, s := range []string{
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"a","b":"c"},"values":[[1.5,"1"],[2,"NaN"]]}]}}`,
		`{"status":"error","errorType":"bad_data","error":"x","warnings":["w"]}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`,
		`{"Status":"success","data":{"result":[{"values":[[-0.0015,"-Inf"]],"metric":{"\u00e9":"\ud83d\ude00"}}],"resultType":"matrix"}}`,
		`{"status":"success","data":null,"warnings":null}`,
		`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"a"},"values":[[1764979230,"57"],[1764979260.25,"0.5"]]}]}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := prometheus.DecodeAnswer(bytes.NewReader(body), until)
		checkTable(t, body, got, err)
		var want oracle
		oerr := json.Unmarshal(body, &want)
		if err != nil {
			if oerr == nil {
				checkRewritten(t, want)
			}
			return
		}
		require.NoError(t, oerr, "the decoder accepted what encoding/json refuses")
		require.Equal(t, want.Status, got.Status)
		require.Equal(t, want.ErrorType, got.ErrorType)
		require.Equal(t, want.Error, got.Error)
		require.Equal(t, want.Warnings, got.Warnings)
		var data oracleData
		if len(want.Data) > 0 && string(want.Data) != "null" {
			require.NoError(t, json.Unmarshal(want.Data, &data))
		}
		require.Equal(t, data.ResultType, got.ResultType)
		if got.ResultType != "matrix" {
			return
		}
		ss, ok := oracleMatrix(data.Result)
		require.Equal(t, ok, got.Bad == "", "bad: %q", got.Bad)
		if ok {
			require.Equal(t, render(prometheus.Answer{Series: ss}), render(prometheus.Answer{Series: got.Series}))
		}
		checkRewritten(t, want)
	})
}

// checkTable decodes body into a table, as a fetch does, and checks it
// holds what the decoder read alone: the same series, each once, its
// samples in time order and one an instant.
func checkTable(t *testing.T, body []byte, alone prometheus.Answer, aloneErr error) {
	tbl := prometheus.NewTable()
	err := tbl.Decode(bytes.NewReader(body), until)
	require.Equal(t, aloneErr == nil && alone.Bad == "", err == nil, "alone: %v %q, into a table: %v", aloneErr, alone.Bad, err)
	if err != nil {
		return
	}
	require.Equal(t, render(prometheus.Answer{Series: joined(alone.Series)}), render(prometheus.Answer{Series: tbl.Series()}))
	// The same answer twice finds its series by their labels as
	// written the second time, and reads the same: each sample twice is
	// one.
	twice := prometheus.NewTable()
	require.NoError(t, twice.Decode(bytes.NewReader(body), until))
	require.NoError(t, twice.Decode(bytes.NewReader(body), until))
	require.Equal(t, render(prometheus.Answer{Series: joined(alone.Series)}), render(prometheus.Answer{Series: twice.Series()}))
}

// joined is the series of an answer one per label set, sorted by labels,
// each series' samples in time order, one an instant: two values for one
// instant are one NaN.
func joined(ss []metrics.Series) []metrics.Series {
	var out []metrics.Series
	for _, s := range ss {
		i := slices.IndexFunc(out, func(o metrics.Series) bool {
			return o.Metric == s.Metric && slices.Equal(o.Labels, s.Labels)
		})
		if i < 0 {
			out = append(out, metrics.Series{Metric: s.Metric, Labels: s.Labels})
			i = len(out) - 1
		}
		out[i].Samples = append(out[i].Samples, s.Samples...)
	}
	for i := range out {
		xs := out[i].Samples
		slices.SortStableFunc(xs, func(a, b usage.Sample) int { return cmp.Compare(a.T, b.T) })
		var one []usage.Sample
		for _, x := range xs {
			if n := len(one); n > 0 && one[n-1].T == x.T {
				if one[n-1].V != x.V && !(math.IsNaN(one[n-1].V) && math.IsNaN(x.V)) {
					one[n-1].V = math.NaN()
				}
				continue
			}
			one = append(one, x)
		}
		out[i].Samples = one
	}
	slices.SortFunc(out, func(a, b metrics.Series) int {
		if c := strings.Compare(a.Metric, b.Metric); c != 0 {
			return c
		}
		return slices.CompareFunc(a.Labels, b.Labels, func(x, y metrics.Label) int {
			if c := strings.Compare(x.Name, y.Name); c != 0 {
				return c
			}
			return strings.Compare(x.Value, y.Value)
		})
	})
	return out
}

// checkRewritten writes a matrix encoding/json read as a server writes it
// and checks the decoder reads the same.
func checkRewritten(t *testing.T, want oracle) {
	var data oracleData
	if len(want.Data) == 0 || json.Unmarshal(want.Data, &data) != nil || data.ResultType != "matrix" {
		return
	}
	ss, ok := oracleMatrix(data.Result)
	if !ok {
		return
	}
	var b bytes.Buffer
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(',')
		}
		m := map[string]string{"__name__": s.Metric}
		for _, l := range s.Labels {
			m[l.Name] = l.Value
		}
		mj, err := json.Marshal(m)
		require.NoError(t, err)
		b.WriteString(`{"metric":`)
		b.Write(mj)
		b.WriteString(`,"values":[`)
		for j, x := range s.Samples {
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `[%s,"%s"]`, seconds(x.T), strconv.FormatFloat(x.V, 'f', -1, 64))
		}
		b.WriteString(`]}`)
	}
	b.WriteString(`]}}`)
	got, err := prometheus.DecodeAnswer(&b, until)
	require.NoError(t, err)
	require.Empty(t, got.Bad)
	require.Equal(t, render(prometheus.Answer{Series: ss}), render(prometheus.Answer{Series: got.Series}))
}

// seconds writes Unix ms as a server writes a time: seconds, and the
// milliseconds after a point when there are any.
func seconds(ms int64) string {
	sign := ""
	u := uint64(ms)
	if ms < 0 {
		sign, u = "-", uint64(-ms)
	}
	s := sign + strconv.FormatUint(u/1000, 10)
	if u%1000 != 0 {
		s += fmt.Sprintf(".%03d", u%1000)
	}
	return s
}

// A sample as Prometheus writes it is read by a fast path; written with a
// space, by the general one: both read it alike, or find it bad alike.
func TestDecodeSampleBothWays(t *testing.T) {
	tests := []struct {
		name, pair string
	}{
		{name: "whole seconds", pair: `[1700000000,"1"]`},
		{name: "milliseconds", pair: `[1700000000.123,"0.5"]`},
		{name: "one fractional digit", pair: `[1700000000.5,"NaN"]`},
		{name: "digits past the millisecond", pair: `[1700000000.12399,"-Inf"]`},
		{name: "zero", pair: `[0,"0"]`},
		{name: "eight digits", pair: `[17000000,"1"]`},
		{name: "nine digits", pair: `[170000000.5,"1"]`},
		{name: "eleven digits", pair: `[17000000001,"1"]`},
		{name: "ten digits, a leading zero", pair: `[0170000000,"1"]`},
		{name: "a point among the first eight", pair: `[1700000.001,"1"]`},
		{name: "fifteen digits", pair: `[999999999999999,"1e308"]`},
		{name: "sixteen digits", pair: `[9223372036854775,"1"]`},
		{name: "past int64 milliseconds", pair: `[9223372036854776,"1"]`},
		{name: "a leading zero", pair: `[01,"1"]`},
		{name: "a point without digits", pair: `[1.,"1"]`},
		{name: "an exponent", pair: `[1e3,"1"]`},
		{name: "negative", pair: `[-1.5,"1"]`},
		{name: "a value that is no number", pair: `[1,"x"]`},
		{name: "an escaped value", pair: `[1,"\u0031"]`},
		{name: "an empty value", pair: `[1,""]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := func(pair string) string {
				return `{"status":"success","data":{"resultType":"matrix","result":[{"values":[` + pair + `]}]}}`
			}
			fast, errFast := prometheus.DecodeAnswer(strings.NewReader(body(tt.pair)), until)
			slow, errSlow := prometheus.DecodeAnswer(strings.NewReader(body("[ "+tt.pair[1:])), until)
			require.Equal(t, errSlow == nil, errFast == nil, "fast %v, slow %v", errFast, errSlow)
			require.Equal(t, render(slow), render(fast))
		})
	}
}

// fakeSeries has a sample every step seconds in [from, to], its value the
// time.
type fakeSeries struct {
	name           string
	from, to, step int64
}

// answerOf writes, as Prometheus writes it, the answer for the samples of
// ss in [lo, hi] (Unix seconds); valuesFirst writes each series' samples
// before its labels.
func answerOf(ss []fakeSeries, lo, hi int64, valuesFirst bool) string {
	var b strings.Builder
	b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
	first := true
	for _, s := range ss {
		var vs []string
		for t := s.from; t <= s.to; t += s.step {
			if t >= lo && t <= hi {
				vs = append(vs, fmt.Sprintf(`[%d,"%d"]`, t, t))
			}
		}
		if len(vs) == 0 {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		metric := fmt.Sprintf(`"metric":{"__name__":%q,"pod":"p"}`, s.name)
		values := `"values":[` + strings.Join(vs, ",") + `]`
		if valuesFirst {
			metric, values = values, metric
		}
		b.WriteString("{" + metric + "," + values + "}")
	}
	b.WriteString(`]}}`)
	return b.String()
}

// The answers of a range's pieces, decoded one after another into one
// table, read as the answer of the whole range; what a failed one put
// there is taken out before it is tried again.
func TestDecodeIntoTable(t *testing.T) {
	ss := []fakeSeries{
		{name: "a", from: 30, to: 10800, step: 30},
		{name: "b", from: 4000, to: 9000, step: 60},
		{name: "c", from: 30, to: 1800, step: 15},
	}
	reversed := slices.Clone(ss)
	slices.Reverse(reversed)
	whole, err := prometheus.DecodeAnswer(strings.NewReader(answerOf(ss, 0, 10800, false)), 10800_000)
	// other changes every value, so that what a failed piece left would
	// show; cut cuts an answer short.
	other := func(s string) string { return strings.ReplaceAll(s, `"]`, `1"]`) }
	cut := func(s string) string { return s[:len(s)*2/3] }
	require.NoError(t, err)
	tests := []struct {
		name   string
		pieces []string
		fails  []bool
	}{
		{
			name: "pieces with closed ends, series in another order, samples before labels",
			pieces: []string{
				answerOf(ss, 0, 3600, false), answerOf(reversed, 3600, 7200, false), answerOf(ss, 7200, 10800, true),
			},
			fails: []bool{false, false, false},
		},
		{
			name: "a piece cut short, one that is no matrix, then both again",
			pieces: []string{
				answerOf(ss, 0, 3600, false),
				cut(other(answerOf(reversed, 3601, 7200, false))),
				strings.Replace(other(answerOf(ss, 7201, 10800, false)), `"90001"`, `"x"`, 1),
				answerOf(reversed, 3601, 7200, false), answerOf(ss, 7201, 10800, false),
			},
			fails: []bool{false, true, true, false, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tbl := prometheus.NewTable()
			for i, p := range tt.pieces {
				err := tbl.Decode(strings.NewReader(p), 10800_000)
				require.Equal(t, tt.fails[i], err != nil, "piece %d: %v", i, err)
			}
			require.Equal(t, render(whole), render(prometheus.Answer{Status: "success", ResultType: "matrix", Series: tbl.Series()}))
		})
	}
}

// A label set written as the answer before wrote it is that series; written
// another way (keys in another order, an empty label more), it is parsed and
// still the same series. Braces and quotes inside a value end nothing.
func TestDecodeIntoTableLabelsAsWritten(t *testing.T) {
	const (
		plain     = `{"__name__":"a","v":"q\"}{[\\"}`
		reordered = `{"v":"q\"}{[\\","__name__":"a"}`
		empty     = `{"__name__":"a","v":"q\"}{[\\","w":""}`
		other     = `{"__name__":"a","v":"q\"}{[\\x"}`
	)
	answer := func(series ...string) string {
		return `{"status":"success","data":{"resultType":"matrix","result":[` + strings.Join(series, ",") + `]}}`
	}
	one := func(metric string, ts ...int) string {
		var vs []string
		for _, ts := range ts {
			vs = append(vs, fmt.Sprintf(`[%d,"%d"]`, ts, ts))
		}
		return `{"metric":` + metric + `,"values":[` + strings.Join(vs, ",") + `]}`
	}
	tests := []struct {
		name   string
		pieces []string
		whole  string
	}{
		{
			name:   "the same bytes, then other bytes for the same labels",
			pieces: []string{answer(one(plain, 1), one(other, 1)), answer(one(plain, 2), one(reordered, 3), one(empty, 4), one(other, 2))},
			whole:  answer(one(plain, 1, 2, 3, 4), one(other, 1, 2)),
		},
		{
			name:   "samples before the labels",
			pieces: []string{answer(one(plain, 1)), answer(`{"values":[[2,"2"]],"metric":` + plain + `}`), answer(one(plain, 3))},
			whole:  answer(one(plain, 1, 2, 3)),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := prometheus.DecodeAnswer(strings.NewReader(tt.whole), 10_000)
			require.NoError(t, err)
			tbl := prometheus.NewTable()
			for i, p := range tt.pieces {
				require.NoError(t, tbl.Decode(strings.NewReader(p), 10_000), "piece %d", i)
			}
			require.Equal(t, render(want), render(prometheus.Answer{Status: "success", ResultType: "matrix", Series: tbl.Series()}))
		})
	}
}

// A series is given room for the rest of the fetch once, from the first
// answer, and never more than aheadFactor (96) times the samples it has.
func TestDecodeIntoTableRoom(t *testing.T) {
	t.Run("a day of 30 s samples after its first 4 hours: no room asked for again", func(t *testing.T) {
		var ss []fakeSeries
		for _, n := range []string{"s1", "s2", "s3"} {
			ss = append(ss, fakeSeries{name: n, from: 30, to: 86400, step: 30})
		}
		tbl := prometheus.NewTable()
		require.NoError(t, tbl.Decode(strings.NewReader(answerOf(ss, 0, 14400, false)), 86400_000))
		first := tbl.Rooms()
		for _, n := range []string{"s2", "s3"} {
			require.GreaterOrEqual(t, first[n], 2880, "%s: room for the day", n)
			require.LessOrEqual(t, first[n], 8*480+4, "%s: at most 8 times its samples", n)
		}
		for lo := int64(14401); lo < 86400; lo += 14400 {
			require.NoError(t, tbl.Decode(strings.NewReader(answerOf(ss, lo, lo+14399, false)), 86400_000))
		}
		after := tbl.Rooms()
		require.Equal(t, first["s2"], after["s2"])
		require.Equal(t, first["s3"], after["s3"])
		for _, s := range tbl.Series() {
			require.Len(t, s.Samples, 2880)
		}
	})
	t.Run("samples past the time asked for grow by doubling", func(t *testing.T) {
		tbl := prometheus.NewTable()
		ss := []fakeSeries{{name: "late", from: 2000, to: 2999, step: 1}}
		require.NoError(t, tbl.Decode(strings.NewReader(answerOf(ss, 0, 3000, false)), 1000_000))
		require.LessOrEqual(t, tbl.Rooms()["late"], 2*1000)
	})
	t.Run("room kept beyond doubling is bounded for the whole answer, whatever the times say", func(t *testing.T) {
		// Three series of 480 samples with a day to go: each would keep
		// room for the day, 1,919 samples beyond twice theirs. Bounded at
		// 4,000, the first two keep it and the third is given back to
		// doubling.
		var ss []fakeSeries
		for _, n := range []string{"s1", "s2", "s3"} {
			ss = append(ss, fakeSeries{name: n, from: 30, to: 14400, step: 30})
		}
		unbounded := prometheus.NewTable()
		require.NoError(t, unbounded.Decode(strings.NewReader(answerOf(ss, 0, 14400, false)), 86400_000))
		require.GreaterOrEqual(t, unbounded.Rooms()["s3"], 2880, "unbounded: room for the day")

		tbl := prometheus.NewTableAhead(4000)
		require.NoError(t, tbl.Decode(strings.NewReader(answerOf(ss, 0, 14400, false)), 86400_000))
		rooms, beyond := tbl.Rooms(), 0
		for _, room := range rooms {
			beyond += max(room-2*480-4, 0)
		}
		require.LessOrEqual(t, beyond, 4000, "rooms %v", rooms)
		require.GreaterOrEqual(t, rooms["s2"], 2880, "s2: room for the day")
		require.LessOrEqual(t, rooms["s3"], 2*480+4, "s3: past the bound, doubling")
		for _, s := range tbl.Series() {
			require.Len(t, s.Samples, 480)
		}
	})
	t.Run("a few samples after a long series hold little room", func(t *testing.T) {
		ss := []fakeSeries{{name: "long", from: 1, to: 500, step: 1}}
		for i := range 20 {
			ss = append(ss, fakeSeries{name: fmt.Sprintf("tiny-%02d", i), from: 1, to: 1, step: 1})
		}
		tbl := prometheus.NewTable()
		require.NoError(t, tbl.Decode(strings.NewReader(answerOf(ss, 0, 500, false)), 1_000_000_000_000))
		for name, room := range tbl.Rooms() {
			if name != "long" {
				require.LessOrEqual(t, room, 8+4, name)
			}
		}
	})
}

// A sample value read by the fast path is the one strconv.ParseFloat
// reads, to the bit; what the fast path leaves is any other string.
func FuzzParseValue(f *testing.F) {
	for _, s := range []string{"0", "-0", "42", "0.1", "-12.75", "007", "99.99999999999999",
		"123456789012345.6", "4503599627370495", "4503599627370496", "0.0000000000000000000001",
		"1e3", "NaN", "+Inf", "-Inf", ".5", "1.", "1_0", "-", "", "1.2.3", "0x10", " 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, ok := prometheus.ParseValue([]byte(s))
		if !ok {
			return
		}
		want, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("%q: fast path read %v, ParseFloat refuses it: %v", s, got, err)
		}
		if math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: fast path read %v (%#x), ParseFloat %v (%#x)", s, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	})
}

// Eight bytes read at once are the number strconv reads when all are
// ASCII digits, and refused otherwise.
func FuzzEightDigits(f *testing.F) {
	for _, s := range []string{"17649792", "00000000", "99999999", "1764979/", "1764979:", "176497 2", "\xff\xff\xff\xff\xff\xff\xff\xff", "+1234567", "1234567\xf9"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) < 8 {
			return
		}
		got, ok := prometheus.EightDigits(b)
		s := string(b[:8])
		digits := !strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' })
		if ok != digits {
			t.Fatalf("%q: ok %v, want %v", s, ok, digits)
		}
		if want, _ := strconv.ParseUint(s, 10, 64); ok && got != want {
			t.Fatalf("%q: read %d, want %d", s, got, want)
		}
	})
}
