package testenv_test

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// answer is what a client got for one request.
type answer struct {
	resp    *http.Response
	body    []byte
	err     error
	elapsed time.Duration
}

// noonQuery asks for pod a's utilisation at the recording's last sample.
func noonQuery(base string) string {
	q := url.Values{"query": {`demo_gpu_sm_utilization_percent{pod="a"}`}, "time": {"2026-11-30T12:00:00Z"}}
	return base + "/api/v1/query?" + q.Encode()
}

func get(client *http.Client, u string) answer {
	start := time.Now()
	resp, err := client.Get(u)
	a := answer{resp: resp, err: err}
	if err == nil {
		a.body, a.err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	a.elapsed = time.Since(start)
	return a
}

// requireValue checks that a is Prometheus's successful answer for pod a.
func requireValue(t *testing.T, a answer) promResult {
	t.Helper()
	require.NoError(t, a.err)
	require.Equal(t, http.StatusOK, a.resp.StatusCode, string(a.body))
	var r promResult
	require.NoError(t, json.Unmarshal(a.body, &r), string(a.body))
	require.Equal(t, "success", r.Status)
	require.Len(t, r.Data.Result, 1)
	require.Equal(t, "42.5", r.Data.Result[0].Value[1])
	return r
}

func TestFaultProxy(t *testing.T) {
	prom := testenv.StartPrometheus(t, filepath.Join("testdata", "gpu.om"))

	tests := []struct {
		name  string
		fault testenv.Fault
		// timeout is the client's, none when zero.
		timeout time.Duration
		check   func(t *testing.T, a answer)
	}{
		{name: "no fault", check: func(t *testing.T, a answer) {
			r := requireValue(t, a)
			require.Empty(t, r.Warnings)
		}},
		{name: "down", fault: testenv.Down(), check: func(t *testing.T, a answer) {
			require.ErrorIs(t, a.err, io.EOF)
		}},
		{name: "slow", fault: testenv.Slow(300 * time.Millisecond), check: func(t *testing.T, a answer) {
			requireValue(t, a)
			require.GreaterOrEqual(t, a.elapsed, 300*time.Millisecond)
		}},
		{name: "slow past the client's timeout", fault: testenv.Slow(time.Hour), timeout: 200 * time.Millisecond, check: func(t *testing.T, a answer) {
			var nerr net.Error
			require.ErrorAs(t, a.err, &nerr)
			require.True(t, nerr.Timeout(), a.err)
			// A minute: far more than a loaded machine takes to time
			// out, far less than the hour the server waits.
			require.Less(t, a.elapsed, time.Minute)
		}},
		{name: "status with a Prometheus error", fault: testenv.Status(http.StatusServiceUnavailable, testenv.ErrorBody("internal", "query queue full")), check: func(t *testing.T, a answer) {
			require.NoError(t, a.err)
			require.Equal(t, http.StatusServiceUnavailable, a.resp.StatusCode)
			require.Equal(t, "application/json", a.resp.Header.Get("Content-Type"))
			require.JSONEq(t, `{"status":"error","errorType":"internal","error":"query queue full"}`, string(a.body))
		}},
		{name: "status with text", fault: testenv.Status(http.StatusBadGateway, "upstream unreachable\n"), check: func(t *testing.T, a answer) {
			require.NoError(t, a.err)
			require.Equal(t, http.StatusBadGateway, a.resp.StatusCode)
			require.Equal(t, "text/plain; charset=utf-8", a.resp.Header.Get("Content-Type"))
			require.Equal(t, "upstream unreachable\n", string(a.body))
		}},
		{name: "rate limited", fault: testenv.RateLimited(1500 * time.Millisecond), check: func(t *testing.T, a answer) {
			require.NoError(t, a.err)
			require.Equal(t, http.StatusTooManyRequests, a.resp.StatusCode)
			require.Equal(t, "2", a.resp.Header.Get("Retry-After"))
		}},
		{name: "warnings", fault: testenv.Warnings("partial data", "too many series"), check: func(t *testing.T, a answer) {
			r := requireValue(t, a)
			require.Equal(t, []string{"partial data", "too many series"}, r.Warnings)
		}},
		{name: "truncate", fault: testenv.Truncate(40), check: func(t *testing.T, a answer) {
			require.NoError(t, a.err)
			require.Equal(t, http.StatusOK, a.resp.StatusCode)
			require.Equal(t, int64(-1), a.resp.ContentLength)
			require.Len(t, a.body, 40)
			var r promResult
			require.EqualError(t, json.Unmarshal(a.body, &r), "unexpected end of JSON input")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			proxy := testenv.NewFaultProxy(t, prom.URL)
			proxy.Set(tt.fault)
			client := &http.Client{Timeout: tt.timeout}
			a := get(client, noonQuery(proxy.URL))
			tt.check(t, a)
			require.Equal(t, 1, proxy.Requests())
			require.Equal(t, 1, proxy.RequestsTo("/api/v1/query"))
			require.Equal(t, 0, proxy.RequestsTo("/api/v1/query_range"))
			if a.err == nil {
				require.Equal(t, int64(len(a.body)), proxy.BytesOut())
			}
		})
	}

	t.Run("times", func(t *testing.T) {
		t.Parallel()
		proxy := testenv.NewFaultProxy(t, prom.URL)
		proxy.Set(testenv.Status(http.StatusServiceUnavailable, testenv.ErrorBody("unavailable", "starting")).Times(2))
		var codes []int
		for range 3 {
			a := get(http.DefaultClient, noonQuery(proxy.URL))
			require.NoError(t, a.err)
			codes = append(codes, a.resp.StatusCode)
		}
		require.Equal(t, []int{503, 503, 200}, codes)
		require.Equal(t, 3, proxy.Requests())

		// Set replaces the fault, and the zero Fault clears it.
		proxy.Set(testenv.Down().Times(1))
		proxy.Set(testenv.Fault{})
		requireValue(t, get(http.DefaultClient, noonQuery(proxy.URL)))
	})

	t.Run("down then up", func(t *testing.T) {
		t.Parallel()
		proxy := testenv.NewFaultProxy(t, prom.URL)
		proxy.Set(testenv.Down().Times(1))
		// A fresh connection, which Go's client does not retry on.
		client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		require.Error(t, get(client, noonQuery(proxy.URL)).err)
		requireValue(t, get(client, noonQuery(proxy.URL)))
		require.Equal(t, 2, proxy.Requests())
	})

	t.Run("concurrent", func(t *testing.T) {
		t.Parallel()
		proxy := testenv.NewFaultProxy(t, prom.URL)
		var wg sync.WaitGroup
		errs := make(chan error, 20)
		for i := range 20 {
			wg.Go(func() {
				if i%2 == 0 {
					proxy.Set(testenv.Warnings("w"))
				} else {
					proxy.Set(testenv.Fault{})
				}
				a := get(http.DefaultClient, noonQuery(proxy.URL))
				if a.err == nil && a.resp.StatusCode != http.StatusOK {
					a.err = errors.New(a.resp.Status)
				}
				errs <- a.err
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			require.NoError(t, err)
		}
		require.Equal(t, 20, proxy.Requests())
	})

	t.Run("bad target", func(t *testing.T) {
		r := &recorder{TB: t}
		require.Nil(t, testenv.NewFaultProxy(r, "127.0.0.1:9090"))
		require.Contains(t, r.fatal, `fault proxy target "127.0.0.1:9090" is not a base URL`)
	})
}

func TestFaultString(t *testing.T) {
	tests := []struct {
		fault testenv.Fault
		want  string
	}{
		{testenv.Fault{}, "no fault"},
		{testenv.Down().Times(3), "down for 3 requests"},
		{testenv.Slow(2 * time.Second), "slow 2s"},
		{testenv.Status(500, ""), "status 500"},
		{testenv.RateLimited(time.Second), "rate limited, retry after 1s"},
		{testenv.Warnings("a"), `warnings ["a"]`},
		{testenv.Truncate(10).Times(0), "truncated after 10 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			require.Equal(t, tt.want, tt.fault.String())
		})
	}
}
