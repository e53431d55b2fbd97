package openmetrics_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
)

func TestParseRecordedFixtures(t *testing.T) {
	const sm = `kubex_gpu_container_sm_utilization_percent{container="server",namespace="team-a",pod="chat-7d9f8c6b5d-x2b4z"}`
	const odd = `odd_labels{nl="a\nb",path="C:\\dir",quote="say \"hi\"",unicode="übung ✓"}`
	tests := []struct {
		name           string
		file           string
		want           []string
		oldest, newest time.Time
	}{
		{
			name: "escapes, special values, exemplars and fractional timestamps",
			file: "basic.om",
			want: []string{
				sm + ` 41.5@1700000000000`,
				sm + ` NaN@1700000060000`,
				sm + ` +Inf@1700000120500`,
				// .0005 s rounds half away from zero.
				sm + ` -Inf@1700000180001`,
				// Another label order, the same series.
				sm + ` 100@1700000240001`,
				// An empty label is no label: the same series again.
				sm + ` 7@1700000300000`,
				`latency_seconds_bucket{le="+Inf"} 4@1700000000000`,
				`latency_seconds_bucket{le="0.5"} 3@1700000000000`,
				`latency_seconds_count{} 4@1700000000000`,
				`latency_seconds_sum{} 1.75@1700000000000`,
				odd + ` -0.25@1700000500000`,
				odd + ` 0.0015@1700000500999`,
				`requests_created{code="200"} 1.69999e+09@1700000000123`,
				`requests_total{code="200"} 17@1700000000123`,
				`requests_total{code="200"} 18@1700000060123`,
			},
			oldest: time.UnixMilli(1700000000000).UTC(),
			newest: time.UnixMilli(1700000500999).UTC(),
		},
		{
			name: "only the end marker",
			file: "empty.om",
		},
		{
			name:   "end marker without a final newline",
			file:   "no-final-newline.om",
			want:   []string{`up{job="node"} 1@1700000000000`},
			oldest: time.UnixMilli(1700000000000).UTC(),
			newest: time.UnixMilli(1700000000000).UTC(),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := openmetrics.OpenRecorded(filepath.Join("..", "testdata", tt.file))
			require.NoError(t, err)
			require.Equal(t, tt.want, metricstest.Dump(r))
			require.Equal(t, tt.oldest, r.Oldest())
			require.Equal(t, tt.newest, r.Newest())
		})
	}
}

func TestOpenRecordedGzip(t *testing.T) {
	dir := t.TempDir()
	plain, err := os.ReadFile(filepath.Join("..", "testdata", "cluster.om"))
	require.NoError(t, err)
	path := filepath.Join(dir, "cluster.om.gz")
	require.NoError(t, os.WriteFile(path, metricstest.Gzipped(t, plain), 0o644))

	got, err := openmetrics.OpenRecorded(path)
	require.NoError(t, err)
	want, err := openmetrics.OpenRecorded(filepath.Join("..", "testdata", "cluster.om"))
	require.NoError(t, err)
	require.Equal(t, metricstest.Dump(want), metricstest.Dump(got))
	require.Len(t, metricstest.Dump(got), 150)

	// A .gz that is not gzip names the file.
	bad := filepath.Join(dir, "bad.om.gz")
	require.NoError(t, os.WriteFile(bad, plain, 0o644))
	_, err = openmetrics.OpenRecorded(bad)
	require.ErrorContains(t, err, bad+": gzip: invalid header")

	_, err = openmetrics.OpenRecorded(filepath.Join(dir, "missing.om"))
	require.ErrorIs(t, err, os.ErrNotExist)
	require.ErrorContains(t, err, filepath.Join(dir, "missing.om"))
}

// formatError is a file the parser must reject, and what promtool makes of
// it: the two must agree on the format, except where a recording is held
// to more than the format (then promtoolAccepts says why).
type formatError struct {
	name  string
	input string
	// wantErr is the whole error: position and message.
	wantErr string
	// promtoolAccepts explains why promtool takes a file the parser
	// rejects; empty means promtool must reject it too.
	promtoolAccepts string
}

func formatErrors() []formatError {
	return []formatError{
		{
			name:    "missing end marker",
			input:   "up 1 1700000000\nup 1 1700000060\n",
			wantErr: `x.om:2: file ends without "# EOF" (OpenMetrics requires it as the last line)`,
		},
		{
			name:    "empty file",
			input:   "",
			wantErr: `x.om:1: file ends without "# EOF" (OpenMetrics requires it as the last line)`,
		},
		{
			name:    "last sample line unterminated",
			input:   "up 1 1700000000",
			wantErr: `x.om:1: file ends without "# EOF" (OpenMetrics requires it as the last line)`,
		},
		{
			name:    "content after the end marker",
			input:   "up 1 1700000000\n# EOF\nup 1 1700000060\n",
			wantErr: `x.om:3: content after "# EOF" (it must be the last line)`,
		},
		{
			name:    "blank line after the end marker",
			input:   "up 1 1700000000\n# EOF\n\n",
			wantErr: `x.om:3: content after "# EOF" (it must be the last line)`,
		},
		{
			name:    "text after the end marker on its line",
			input:   "up 1 1700000000\n# EOF \n",
			wantErr: `x.om:2:6: unexpected text after "# EOF"`,
		},
		{
			name:    "end marker with a carriage return",
			input:   "up 1 1700000000\n# EOF\r\n",
			wantErr: `x.om:2:6: unexpected text after "# EOF"`,
		},
		{
			name:    "sample without timestamp",
			input:   "# TYPE up gauge\nup{job=\"node\"} 1\n# EOF\n",
			wantErr: `x.om:2: sample has no timestamp (a recorded file needs one on every sample)`,
		},
		{
			name:    "exemplar without sample timestamp",
			input:   "a_total 1 # {trace_id=\"x\"} 1\n# EOF\n",
			wantErr: `x.om:1: sample has no timestamp (a recorded file needs one on every sample)`,
		},
		{
			name:    "duplicate label name",
			input:   "up 1 1700000000\nup{job=\"a\",job=\"b\"} 1 1700000000\n# EOF\n",
			wantErr: `x.om:2:12: duplicate label name "job"`,
		},
		{
			name:    "metric name as a label",
			input:   "up{__name__=\"up\"} 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:4: duplicate label name "__name__" (it holds the metric name)`,
		},
		{
			name:            "timestamps going back",
			input:           "up 1 1700000060\nup 2 1700000000\n# EOF\n",
			wantErr:         `x.om:2:6: series up: timestamp 1700000000.000 is not after 1700000060.000 on line 1 (OpenMetrics requires strictly increasing timestamps)`,
			promtoolAccepts: "promtool drops an out-of-order sample silently",
		},
		{
			name:            "repeated timestamp",
			input:           "up{job=\"a\"} 1 1700000000\nup{job=\"b\"} 1 1700000000\nup{job=\"a\"} 2 1700000000.0001\n# EOF\n",
			wantErr:         `x.om:3:15: series up{job="a"}: timestamp 1700000000.000 is not after 1700000000.000 on line 1 (OpenMetrics requires strictly increasing timestamps)`,
			promtoolAccepts: "promtool keeps the first of two samples at one millisecond silently",
		},
		{
			name:            "invalid escape",
			input:           "up{job=\"a\\tb\"} 1 1700000000\n# EOF\n",
			wantErr:         `x.om:1:10: invalid escape "\\t" in label value (only \\, \" and \n are allowed)`,
			promtoolAccepts: `promtool keeps an unknown escape as the two characters; OpenMetrics defines only \\, \" and \n`,
		},
		{
			name:    "unterminated label value",
			input:   "up{job=\"a} 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:8: unterminated label value`,
		},
		{
			name:    "label value ending in a backslash",
			input:   "up{job=\"a\\\n# EOF\n",
			wantErr: `x.om:1:8: unterminated label value`,
		},
		{
			name:    "label value not UTF-8",
			input:   "up{job=\"\xff\"} 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:9: label value is not valid UTF-8`,
		},
		{
			name:    "bad value",
			input:   "up 1,5 1700000000\n# EOF\n",
			wantErr: `x.om:1:4: invalid sample value "1,5"`,
		},
		{
			name:    "hexadecimal value",
			input:   "up 0x1p3 1700000000\n# EOF\n",
			wantErr: `x.om:1:4: invalid sample value "0x1p3"`,
		},
		{
			name:    "digit separator",
			input:   "up 1_000 1700000000\n# EOF\n",
			wantErr: `x.om:1:4: invalid sample value "1_000"`,
		},
		{
			name:    "value out of range",
			input:   "up 1e400 1700000000\n# EOF\n",
			wantErr: `x.om:1:4: invalid sample value "1e400"`,
		},
		{
			name:    "bad timestamp",
			input:   "up 1 2023-11-14\n# EOF\n",
			wantErr: `x.om:1:6: invalid timestamp "2023-11-14" (want seconds since the epoch)`,
		},
		{
			name:    "NaN timestamp",
			input:   "up 1 NaN\n# EOF\n",
			wantErr: `x.om:1:6: invalid timestamp "NaN" (want seconds since the epoch)`,
		},
		{
			name:    "carriage return line end",
			input:   "up 1 1700000000\r\n# EOF\n",
			wantErr: `x.om:1:6: invalid timestamp "1700000000\r" (want seconds since the epoch)`,
		},
		{
			name:    "empty line",
			input:   "up 1 1700000000\n\nup 1 1700000060\n# EOF\n",
			wantErr: `x.om:2: empty line (OpenMetrics allows none)`,
		},
		{
			name:    "plain comment",
			input:   "# recorded by hand\nup 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:1: comment is not # HELP, # TYPE, # UNIT or # EOF (OpenMetrics allows no other)`,
		},
		{
			name:    "unknown type",
			input:   "# TYPE up untyped\nup 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:11: invalid metric type "untyped" (want counter, gauge, histogram, gaugehistogram, summary, info, stateset or unknown)`,
		},
		{
			name:    "type without text",
			input:   "# TYPE up\nup 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:10: expected a space and the type text after the metric name`,
		},
		{
			name:    "unit not a suffix",
			input:   "# UNIT up seconds\nup 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:11: unit "seconds" is not a suffix of metric "up"`,
		},
		{
			name:    "help not UTF-8",
			input:   "# HELP up \xff\nup 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:11: help text is not valid UTF-8`,
		},
		{
			name:    "metadata without metric name",
			input:   "# HELP  two spaces\nup 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:8: expected a metric name after # HELP`,
		},
		{
			name:    "bad metric name",
			input:   "1up 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:1: expected a metric name, found "1"`,
		},
		{
			name:    "bad label name",
			input:   "up{1job=\"a\"} 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:4: expected a label name or '}'`,
		},
		{
			name:    "trailing comma",
			input:   "up{job=\"a\",} 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:12: expected a label name after ','`,
		},
		{
			name:    "space between labels",
			input:   "up{job=\"a\", instance=\"b\"} 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:12: expected a label name after ','`,
		},
		{
			name:    "unquoted label value",
			input:   "up{job=a} 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:8: expected a double-quoted label value`,
		},
		{
			name:    "missing equals",
			input:   "up{job} 1 1700000000\n# EOF\n",
			wantErr: `x.om:1:7: expected '=' after label name job`,
		},
		{
			name:    "two spaces before value",
			input:   "up  1 1700000000\n# EOF\n",
			wantErr: `x.om:1:4: expected the sample value`,
		},
		{
			name:    "tab before value",
			input:   "up\t1 1700000000\n# EOF\n",
			wantErr: `x.om:1:3: expected a space and the sample value after the series`,
		},
		{
			name:    "trailing space",
			input:   "up 1 1700000000 \n# EOF\n",
			wantErr: `x.om:1:16: unexpected text after the timestamp (only an exemplar, ` + "` # {...} value`" + `, may follow)`,
		},
		{
			name:    "exemplar on a gauge",
			input:   "up 1 1700000000 # {trace_id=\"x\"} 1\n# EOF\n",
			wantErr: `x.om:1:17: exemplar on up (OpenMetrics allows exemplars only on counters, _total, and histogram buckets, _bucket)`,
		},
		{
			name:    "exemplar without value",
			input:   "a_total 1 1700000000 # {trace_id=\"x\"}\n# EOF\n",
			wantErr: `x.om:1:38: expected a space and the exemplar value`,
		},
		{
			name:    "exemplar with bad value",
			input:   "a_total 1 1700000000 # {trace_id=\"x\"} x\n# EOF\n",
			wantErr: `x.om:1:39: invalid exemplar value "x"`,
		},
		{
			name:    "exemplar with NaN timestamp",
			input:   "a_total 1 1700000000 # {trace_id=\"x\"} 1 NaN\n# EOF\n",
			wantErr: `x.om:1:41: invalid exemplar timestamp "NaN"`,
		},
		{
			name:    "text after exemplar",
			input:   "a_total 1 1700000000 # {trace_id=\"x\"} 1 1700000000 x\n# EOF\n",
			wantErr: `x.om:1:51: unexpected text after the exemplar`,
		},
		{
			name:    "exemplar label not UTF-8",
			input:   "a_total 1 1700000000 # {trace_id=\"\xff\"} 1\n# EOF\n",
			wantErr: `x.om:1:35: exemplar label value is not valid UTF-8`,
		},
	}
}

func TestParseRecordedErrors(t *testing.T) {
	for _, tt := range formatErrors() {
		t.Run(tt.name, func(t *testing.T) {
			_, err := openmetrics.ParseRecorded(strings.NewReader(tt.input), "x.om")
			require.EqualError(t, err, tt.wantErr)
			var le *located.Error
			require.ErrorAs(t, err, &le)
			require.Equal(t, "x.om", le.File)
			require.Positive(t, le.Line)
		})
	}
}

func TestOpenRecordedErrorNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "metrics.om")
	var b strings.Builder
	for i := range 1233 {
		b.WriteString("up 1 " + metricstest.Seconds(metricstest.T0.Add(time.Duration(i)*time.Minute).UnixMilli()) + "\n")
	}
	b.WriteString("up 1\n# EOF\n")
	require.NoError(t, os.WriteFile(path, []byte(b.String()), 0o644))
	_, err := openmetrics.OpenRecorded(path)
	require.EqualError(t, err, path+":1234: sample has no timestamp (a recorded file needs one on every sample)")
}
