package testenv_test

import (
	"compress/gzip"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// promResult is the part of a /api/v1/query answer the tests read.
type promResult struct {
	Status   string   `json:"status"`
	Warnings []string `json:"warnings"`
	Data     struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	} `json:"data"`
}

// query asks base for expr at the instant at and decodes the answer.
func query(t *testing.T, client *http.Client, base, expr string, at time.Time) (*http.Response, promResult) {
	t.Helper()
	q := url.Values{"query": {expr}, "time": {at.Format(time.RFC3339)}}
	resp, err := client.Get(base + "/api/v1/query?" + q.Encode())
	require.NoError(t, err)
	defer resp.Body.Close()
	var r promResult
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	return resp, r
}

// gzipped writes a gzipped copy of file into a temporary directory.
func gzipped(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), filepath.Base(file)+".gz")
	f, err := os.Create(out)
	require.NoError(t, err)
	zw := gzip.NewWriter(f)
	_, err = zw.Write(b)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, f.Close())
	return out
}

func TestStartPrometheus(t *testing.T) {
	// Two recordings over the same hour, one gzipped, both served.
	prom := testenv.StartPrometheus(t, filepath.Join("testdata", "gpu.om"), gzipped(t, filepath.Join("testdata", "memory.om")))

	noon := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		expr string
		at   time.Time
		want map[string]string // pod → value
	}{
		{name: "last sample", expr: `demo_gpu_sm_utilization_percent`, at: noon, want: map[string]string{"a": "42.5", "b": "5"}},
		{name: "first sample", expr: `demo_gpu_sm_utilization_percent{pod="a"}`, at: noon.Add(-10 * time.Minute), want: map[string]string{"a": "21"}},
		{name: "between samples", expr: `demo_gpu_sm_utilization_percent{pod="a"}`, at: noon.Add(-7*time.Minute - 30*time.Second), want: map[string]string{"a": "25"}},
		{name: "over a range", expr: `max_over_time(demo_gpu_sm_utilization_percent{pod="a"}[10m])`, at: noon, want: map[string]string{"a": "42.5"}},
		{name: "gzipped recording", expr: `demo_gpu_memory_used_bytes`, at: noon, want: map[string]string{"a": "8600420352"}},
		{name: "before the recording", expr: `demo_gpu_sm_utilization_percent`, at: noon.Add(-time.Hour), want: map[string]string{}},
		// Old data is not deleted by retention, nor is anything scraped.
		{name: "nothing else", expr: `count({__name__!=""})`, at: noon, want: map[string]string{"": "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, r := query(t, http.DefaultClient, prom.URL, tt.expr, tt.at)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.Equal(t, "success", r.Status)
			require.Equal(t, "vector", r.Data.ResultType)
			got := map[string]string{}
			for _, s := range r.Data.Result {
				require.Equal(t, float64(tt.at.Unix()), s.Value[0])
				got[s.Metric["pod"]] = s.Value[1].(string)
			}
			require.Equal(t, tt.want, got)
		})
	}
	require.Contains(t, prom.Log(), "Server is ready to receive web requests")
}

func TestStartPrometheusStopsTheServer(t *testing.T) {
	var base string
	t.Run("server", func(t *testing.T) {
		base = testenv.StartPrometheus(t).URL
		resp, err := http.Get(base + "/-/ready")
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
	})
	_, err := http.Get(base + "/-/ready")
	require.ErrorContains(t, err, "connection refused")
}

func TestStartPrometheusFails(t *testing.T) {
	promtool := testenv.LookPath(t, "promtool")
	testenv.LookPath(t, "prometheus")

	t.Run("recording promtool rejects", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "no-eof.om")
		require.NoError(t, os.WriteFile(bad, []byte("demo_metric 1 1796040000\n"), 0o644))
		r := &recorder{TB: t}
		require.Nil(t, testenv.StartPrometheus(r, bad))
		require.Contains(t, r.fatal, "backfilling "+bad+" with promtool")
	})

	t.Run("server exits", func(t *testing.T) {
		// A prometheus that dies at once, next to the real promtool.
		bin := t.TempDir()
		require.NoError(t, os.Symlink(promtool, filepath.Join(bin, "promtool")))
		require.NoError(t, os.WriteFile(filepath.Join(bin, "prometheus"), []byte("#!/bin/sh\necho 'no TSDB for you' >&2\nexit 3\n"), 0o755))
		t.Setenv("PATH", bin)
		r := &recorder{TB: t}
		require.Nil(t, testenv.StartPrometheus(r, filepath.Join("testdata", "gpu.om")))
		require.Contains(t, r.fatal, "prometheus exited before it was ready: exit status 3")
		require.Contains(t, r.fatal, "no TSDB for you")
	})
}
