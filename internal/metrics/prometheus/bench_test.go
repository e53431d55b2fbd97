package prometheus_test

import (
	"bufio"
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// benchPrometheusEnv turns BenchmarkPrometheusUsage on: it backfills
// millions of samples into a real server, too slow for every `make bench`.
const benchPrometheusEnv = "RECOMMENDER_BENCH_PROMETHEUS"

// writeFleet writes a recording of pods Deployments of one pod each over 50
// namespaces, a compute and a memory series and the kube-state-metrics
// owner series per pod, a sample a minute for span, ending at t0.
func writeFleet(b *testing.B, pods int, span time.Duration) (string, []usage.Ref) {
	b.Helper()
	path := filepath.Join(b.TempDir(), fmt.Sprintf("fleet-%d.om", pods))
	f, err := os.Create(path)
	require.NoError(b, err)
	w := bufio.NewWriterSize(f, 1<<20)
	n := int(span / time.Minute)
	start := metricstest.T0.Add(-span).Unix()
	name := func(i int) (ns, d, rs, pod string) {
		ns, d = fmt.Sprintf("serving-%02d", i%50), fmt.Sprintf("llm-%04d", i)
		rs = d + "-7d9f8c6b5d"
		return ns, d, rs, rs + "-x2b4z"
	}
	var refs []usage.Ref
	write := func(series func(i int) string, value func(i, k int) int) {
		for i := range pods {
			s := series(i)
			for k := 1; k <= n; k++ {
				fmt.Fprintf(w, "%s %d %d\n", s, value(i, k), start+int64(k)*60)
			}
		}
	}
	one := func(int, int) int { return 1 }
	write(func(i int) string {
		ns, _, _, pod := name(i)
		return metricstest.UsageOf(engineCompute, ns, pod, "server")
	}, func(i, k int) int { return (i + k) % 100 })
	write(func(i int) string {
		ns, _, _, pod := name(i)
		return metricstest.UsageOf(engineMemory, ns, pod, "server")
	}, func(i, k int) int { return (i*3 + k) % 100 })
	write(func(i int) string { ns, _, rs, pod := name(i); return metricstest.PodOwner(ns, pod, "ReplicaSet", rs) }, one)
	write(func(i int) string {
		ns, d, rs, _ := name(i)
		return metricstest.ReplicaSetOwner(ns, rs, "Deployment", d)
	}, one)
	for i := range pods {
		ns, d, _, _ := name(i)
		refs = append(refs, metricstest.Deployment(ns, d))
	}
	fmt.Fprintln(w, "# EOF")
	require.NoError(b, w.Flush())
	require.NoError(b, f.Close())
	return path, refs
}

const (
	engineCompute = "kubex_gpu_container_sm_utilization_percent"
	engineMemory  = "kubex_gpu_container_memory_footprint_percent"
)

// BenchmarkPrometheusUsage answers one query for every Deployment of a
// fleet from a real Prometheus, through a proxy that counts requests and
// bytes. Run it with `make bench-prometheus`.
func BenchmarkPrometheusUsage(b *testing.B) {
	if os.Getenv(benchPrometheusEnv) == "" {
		b.Skipf("set %s=1 (make bench-prometheus): it backfills millions of samples", benchPrometheusEnv)
	}
	for _, bc := range []struct {
		pods int
		span time.Duration
	}{
		{50, 24 * time.Hour},
		{50, 2 * time.Hour},
		{5000, 2 * time.Hour},
	} {
		b.Run(fmt.Sprintf("pods=%d/span=%s", bc.pods, bc.span), func(b *testing.B) {
			path, refs := writeFleet(b, bc.pods, bc.span)
			srv := testenv.StartPrometheus(b, path)
			proxy := testenv.NewFaultProxy(b, srv.URL)
			prom, err := prometheus.New(prometheus.Config{URL: proxy.URL})
			require.NoError(b, err)
			q := usage.Query{At: metricstest.T0, Lookback: bc.span, Metrics: preset.Kubex.Mappings(), Workloads: refs}
			res, err := prom.Usage(context.Background(), q)
			require.NoError(b, err)
			require.Len(b, res.Workloads, bc.pods)
			requests, bytes := proxy.Requests(), proxy.BytesOut()
			b.ResetTimer()
			for b.Loop() {
				if _, err := prom.Usage(context.Background(), q); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(proxy.Requests()-requests)/float64(b.N), "requests/op")
			b.ReportMetric(float64(proxy.BytesOut()-bytes)/float64(b.N)/(1<<20), "MiB/op")
		})
	}
}

// BenchmarkInflate inflates an answer of the e2e fleet, 10,000 pods over
// 15 minutes gzipped as the replay gzips it, with the inflate the client
// uses (klauspost/compress) and with compress/gzip, which net/http used.
func BenchmarkInflate(b *testing.B) {
	var body bytes.Buffer
	zw, err := stdgzip.NewWriterLevel(&body, stdgzip.BestSpeed)
	require.NoError(b, err)
	to := metricstest.T0.Unix()
	_, err = fleetAnswer(zw, 10000, to-int64(firstPieceSeconds), to)
	require.NoError(b, err)
	require.NoError(b, zw.Close())
	for _, bc := range []struct {
		name string
		open func(io.Reader) (io.Reader, error)
	}{
		{"klauspost", func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) }},
		{"compress-gzip", func(r io.Reader) (io.Reader, error) { return stdgzip.NewReader(r) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			buf := make([]byte, 64<<10)
			b.SetBytes(int64(body.Len()))
			for b.Loop() {
				zr, err := bc.open(bytes.NewReader(body.Bytes()))
				if err != nil {
					b.Fatal(err)
				}
				// As the decoder reads: into a buffer of its own.
				if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{zr}, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// firstPieceSeconds is the client's first piece of a range.
const firstPieceSeconds = 15 * 60
