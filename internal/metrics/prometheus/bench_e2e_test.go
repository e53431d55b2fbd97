package prometheus_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// The children of BenchmarkE2EPrometheus ask the server at e2eURLEnv for
// the fleet of e2ePodsEnv pods.
const (
	e2eURLEnv  = "RECOMMENDER_BENCH_E2E_URL"
	e2ePodsEnv = "RECOMMENDER_BENCH_E2E_PODS"
)

// e2eSamples is a day at 30 s.
const e2eSamples = 24 * 60 * 2

// e2eFleet names the pods of the fleet, one per Deployment over 50
// namespaces, as writeFleet does.
func e2eFleet(i int) (ns, d, rs, pod string) {
	ns, d = fmt.Sprintf("serving-%02d", i%50), fmt.Sprintf("llm-%04d", i)
	rs = d + "-7d9f8c6b5d"
	return ns, d, rs, rs + "-x2b4z"
}

// e2eQuery is the query of the fleet's every Deployment over the day.
func e2eQuery(pods int) usage.Query {
	q := usage.Query{At: metricstest.T0, Lookback: 24 * time.Hour, Metrics: preset.Kubex.Mappings()}
	for i := range pods {
		ns, d, _, _ := e2eFleet(i)
		q.Workloads = append(q.Workloads, metricstest.Deployment(ns, d))
	}
	return q
}

// fleetAnswer writes the answer Prometheus gives for the fleet's series
// in (from, to] (Unix seconds), as it writes it: the compute and memory
// series of each pod and its kube_pod_owner and kube_replicaset_owner
// series, a sample each 30 s over the day before metricstest.T0. It
// returns the bytes written.
func fleetAnswer(w io.Writer, pods int, from, to int64) (int64, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	var n int64
	write := func(b []byte) {
		m, _ := bw.Write(b)
		n += int64(m)
	}
	write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[`))
	first := true
	start := metricstest.T0.Add(-24*time.Hour).Unix() + 30
	var buf []byte
	series := func(labels string, value func(k int) int) {
		buf = buf[:0]
		if !first {
			buf = append(buf, ',')
		}
		first = false
		buf = append(buf, `{"metric":{`+labels+`},"values":[`...)
		sep := false
		for k := range e2eSamples {
			t := start + int64(k)*30
			if t <= from || t > to {
				continue
			}
			if sep {
				buf = append(buf, ',')
			}
			sep = true
			buf = append(buf, '[')
			buf = strconv.AppendInt(buf, t, 10)
			buf = append(buf, ',', '"')
			buf = strconv.AppendInt(buf, int64(value(k)), 10)
			buf = append(buf, '"', ']')
			if len(buf) > 32<<10 {
				write(buf)
				buf = buf[:0]
			}
		}
		buf = append(buf, `]}`...)
		write(buf)
	}
	one := func(int) int { return 1 }
	for i := range pods {
		ns, d, rs, pod := e2eFleet(i)
		series(fmt.Sprintf(`"__name__":"%s","container":"server","namespace":"%s","pod":"%s"`, engineCompute, ns, pod), func(k int) int { return (i + k) % 100 })
		series(fmt.Sprintf(`"__name__":"%s","container":"server","namespace":"%s","pod":"%s"`, engineMemory, ns, pod), func(k int) int { return (i*3 + k) % 100 })
		series(fmt.Sprintf(`"__name__":"kube_pod_owner","namespace":"%s","owner_is_controller":"true","owner_kind":"ReplicaSet","owner_name":"%s","pod":"%s"`, ns, rs, pod), one)
		series(fmt.Sprintf(`"__name__":"kube_replicaset_owner","namespace":"%s","owner_is_controller":"true","owner_kind":"Deployment","owner_name":"%s","replicaset":"%s"`, ns, d, rs), one)
	}
	write([]byte(`]}}`))
	return n, bw.Flush()
}

// replay answers the query API for the fleet as Prometheus would: the
// samples in the range asked for to a selector of "namespace", an empty
// matrix to any other (the exported_namespace one), gzipped when the
// client accepts it. It notes the bytes of the answers, and the forms
// whose answers were read to the end, for curl to ask the same: the
// limit reads the data the tool kept, once, and not the answers the tool
// gave up as too long.
type replay struct {
	pods  int
	mu    sync.Mutex
	forms []string
	bytes int64
}

func (rp *replay) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := r.Form.Get("query")
	at, err := strconv.ParseFloat(r.Form.Get("time"), 64)
	i := strings.LastIndexByte(q, '[')
	if err != nil || i < 0 || !strings.HasSuffix(q, "]") {
		http.Error(w, "want a range selector and a time", http.StatusBadRequest)
		return
	}
	d, err := model.ParseDuration(q[i+1 : len(q)-1])
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	var out io.Writer = w
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		w.Header().Set("Content-Encoding", "gzip")
		z, _ := gzip.NewWriterLevel(w, gzip.BestSpeed)
		defer z.Close()
		out = z
	}
	pods := rp.pods
	if !strings.Contains(q, ", namespace=~") {
		pods = 0
	}
	to := int64(at)
	n, err := fleetAnswer(out, pods, to-int64(time.Duration(d).Seconds()), to)
	rp.mu.Lock()
	defer rp.mu.Unlock()
	rp.bytes += n
	if err == nil {
		rp.forms = append(rp.forms, r.PostForm.Encode())
	}
}

// TestE2EPrometheusChild is a child process of BenchmarkE2EPrometheus, and
// nothing in a test run: it answers the fleet's query from the server.
func TestE2EPrometheusChild(t *testing.T) {
	if testenv.E2EChild() != "usage" {
		t.Skip("a child of BenchmarkE2EPrometheus")
	}
	pods, err := strconv.Atoi(os.Getenv(e2ePodsEnv))
	if err != nil {
		t.Fatal(err)
	}
	prom, err := prometheus.New(prometheus.Config{URL: os.Getenv(e2eURLEnv)})
	if err != nil {
		t.Fatal(err)
	}
	res, err := prom.Usage(context.Background(), e2eQuery(pods))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workloads) != pods {
		t.Fatalf("%d workloads, want %d", len(res.Workloads), pods)
	}
}

// BenchmarkE2EPrometheus is the Prometheus row of issue 23's table: a day
// at 30 s of 2,000 pods (RECOMMENDER_BENCH_E2E_PODS) answered by a server
// that replays Prometheus' answer (the client's cost, not the server's),
// against curl asking the same queries, each in a process of its own, one
// round an iteration (-benchtime 3x: three). Both ask for gzip, as the
// tool's transport does and Prometheus answers it. It reports the median
// of the rounds' CPU ratios and the client's peak RSS over the bytes of
// the samples it keeps, and fails when either is more than a third above
// testdata/bench-e2e.json. `make bench-e2e` runs it.
func BenchmarkE2EPrometheus(b *testing.B) {
	testenv.SkipUnlessE2E(b)
	curl := testenv.LookPath(b, "curl")
	pods := 2000
	if v := os.Getenv(e2ePodsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("%s=%q: want a number of pods", e2ePodsEnv, v)
		}
		pods = n
	}
	rp := &replay{pods: pods}
	srv := httptest.NewServer(rp)
	b.Cleanup(srv.Close)
	env := []string{e2eURLEnv + "=" + srv.URL, e2ePodsEnv + "=" + strconv.Itoa(pods)}
	samples := float64(pods*4*e2eSamples) * 16

	var ratios, plainRatios []float64
	var tool, viaCurl []time.Duration
	var rss []int64
	var answered int64
	var forms []string
	for b.Loop() {
		rp.mu.Lock()
		rp.forms, rp.bytes = nil, 0
		rp.mu.Unlock()
		t := testenv.Measure(b, testenv.Child("usage", "TestE2EPrometheusChild", env...))
		rp.mu.Lock()
		forms = slices.Clone(rp.forms)
		answered = rp.bytes
		rp.mu.Unlock()
		c := curlCost(b, curl, srv.URL, forms, true)
		p := curlCost(b, curl, srv.URL, forms, false)
		tool, viaCurl = append(tool, t.CPU), append(viaCurl, c)
		ratios = append(ratios, float64(t.CPU)/float64(c))
		plainRatios = append(plainRatios, float64(t.CPU)/float64(p))
		rss = append(rss, t.MaxRSS)
	}
	cpuRatio, rssRatio := testenv.Median(ratios), float64(testenv.Median(rss))/samples
	b.ReportMetric(cpuRatio, "cpu-ratio")
	b.ReportMetric(testenv.Median(plainRatios), "cpu-ratio-plain-curl")
	b.ReportMetric(rssRatio, "rss/samples")
	b.ReportMetric(float64(testenv.Median(rss))/(1<<20), "rss-MiB")
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), map[string]float64{"cpu-ratio": cpuRatio, "rss-ratio": rssRatio})
	testenv.WriteSection(b, filepath.Join("..", "..", "..", "BENCHMARKS.md"), "prometheus", fmt.Sprintf(
		"| answers | client CPU | curl CPU | **CPU ratio** | (to curl without gzip) | peak RSS | samples kept | **RSS / samples** |\n"+
			"|---|---:|---:|---:|---:|---:|---:|---:|\n"+
			"| %d pods, a day at 30 s: %d answers read whole, %.0f MB of JSON in all | %.2f s | %.2f s | **%.2f×** | %.2f× | %.0f MiB | %.0f MiB | **%.2f×** |\n",
		pods, len(forms), float64(answered)/1e6, testenv.Median(tool).Seconds(), testenv.Median(viaCurl).Seconds(), cpuRatio,
		testenv.Median(plainRatios), float64(testenv.Median(rss))/(1<<20), samples/(1<<20), rssRatio))
}

// curlCost is the CPU time curl takes to ask the forms the tool asked,
// one process each, with gzip or without.
func curlCost(b *testing.B, curl, url string, forms []string, compressed bool) time.Duration {
	var total time.Duration
	for _, f := range forms {
		args := []string{"-sS", "--fail", "-o", "/dev/null", "--data-binary", f, "-H", "Content-Type: application/x-www-form-urlencoded"}
		if compressed {
			args = append(args, "--compressed")
		}
		total += testenv.Measure(b, exec.Command(curl, append(args, url+"/api/v1/query")...)).CPU
	}
	return total
}
