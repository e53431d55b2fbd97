package prometheus_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
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

	"github.com/gpu-rightsizing/recommender/internal/metrics"
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
	// e2eLookbackEnv is the window the child asks for (a Go duration).
	e2eLookbackEnv = "RECOMMENDER_BENCH_E2E_LOOKBACK"
)

// e2eSamples is a day at 30 s.
const e2eSamples = 24 * 60 * 2

// scaleLookback is the window of the exponent rows: two hours at 30 s
// (240 samples a series), so that 10,000 pods are answered in about
// 0.2 GB of JSON and a row's time is its series' rather than a few
// series' samples. scaleLookbackEnv sets another (at most a day).
const (
	scaleLookback    = 2 * time.Hour
	scaleLookbackEnv = "RECOMMENDER_BENCH_E2E_SCALE_LOOKBACK"
)

// scalePods are the sizes the exponent rows compare.
var scalePods = [2]int{1000, 10000}

// e2eFleet names the pods of the fleet, one per Deployment over 50
// namespaces, as writeFleet does.
func e2eFleet(i int) (ns, d, rs, pod string) {
	ns, d = fmt.Sprintf("serving-%02d", i%50), fmt.Sprintf("llm-%04d", i)
	rs = d + "-7d9f8c6b5d"
	return ns, d, rs, rs + "-x2b4z"
}

// e2eQuery is the query of the fleet's every Deployment over lookback (at
// most the day).
func e2eQuery(pods int, lookback time.Duration) usage.Query {
	q := usage.Query{At: metricstest.T0, Lookback: lookback, Metrics: preset.Kubex.Mappings()}
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
		// From the first sample after from, so that the server does
		// not scan the whole day for each series of a short range.
		k0 := 0
		if from >= start {
			k0 = int((from-start)/30) + 1
		}
		for k := k0; k < e2eSamples; k++ {
			t := start + int64(k)*30
			if t > to {
				break
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
	if !strings.Contains(q, ", namespace=~") || strings.Contains(q, metrics.PodPhaseMetric) {
		// The fleet's series carry the plain labels, and none of its
		// pods has ended.
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
	lookback, err := time.ParseDuration(os.Getenv(e2eLookbackEnv))
	if err != nil {
		t.Fatal(err)
	}
	prom, err := prometheus.New(prometheus.Config{URL: os.Getenv(e2eURLEnv)})
	if err != nil {
		t.Fatal(err)
	}
	q := e2eQuery(pods, lookback)
	res, err := prom.Usage(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Workloads) != pods {
		t.Fatalf("%d workloads, want %d", len(res.Workloads), pods)
	}
	// Each Deployment counts its one pod, every sample of the window.
	samples := int(lookback / (30 * time.Second))
	for i, ref := range q.Workloads {
		_, _, _, pod := e2eFleet(i)
		w := res.Workloads[ref]
		if len(w.Pods) != 1 || w.Pods[0].Name != pod {
			t.Fatalf("%s: %d pods, want %s alone", ref, len(w.Pods), pod)
		}
		for _, m := range []usage.Metric{usage.Compute, usage.Memory} {
			if n := len(w.Pods[0].Series[m]); n != samples {
				t.Fatalf("%s: %d samples of %s, want %d", ref, n, m, samples)
			}
		}
	}
}

// BenchmarkE2EPrometheus is the Prometheus row of the end-to-end table: a day
// at 30 s of 2,000 pods (RECOMMENDER_BENCH_E2E_PODS) answered by a server
// that replays Prometheus' answer (the client's cost, not the server's),
// against curl asking the same queries, each in a process of its own, one
// round an iteration (-benchtime 3x: three). Both ask for gzip, as the
// tool's transport does and Prometheus answers it. It reports the median
// of the rounds' CPU ratios and the client's peak RSS over the bytes of
// the samples it keeps. Each round also measures the exponent row
// (scaleRow): the fleet of 1,000 and of 10,000 pods over two hours
// (RECOMMENDER_BENCH_E2E_SCALE_LOOKBACK), each against curl; it reports
// the client's CPU exponent between the sizes. It fails when a ratio or
// the exponent lands outside its tolerance of testdata/bench-e2e.json
// (testenv.Departure).
// `make bench-e2e` runs it.
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
	env := []string{e2eURLEnv + "=" + srv.URL, e2ePodsEnv + "=" + strconv.Itoa(pods), e2eLookbackEnv + "=24h"}
	scale := newScaleRow(b)
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
		scale.round(b, curl)
	}
	cpuRatio, rssRatio := testenv.Median(ratios), float64(testenv.Median(rss))/samples
	b.ReportMetric(cpuRatio, "cpu-ratio")
	b.ReportMetric(testenv.Median(plainRatios), "cpu-ratio-plain-curl")
	b.ReportMetric(rssRatio, "rss/samples")
	b.ReportMetric(float64(testenv.Median(rss))/(1<<20), "rss-MiB")
	exponent, curlExponent := scale.exponents()
	b.ReportMetric(exponent, "cpu-exponent")
	b.ReportMetric(curlExponent, "curl-cpu-exponent")
	b.ReportMetric(scale.ratio(1), "cpu-ratio-10k")
	rows := fmt.Sprintf(
		"| answers | client CPU | curl CPU | **CPU ratio** | (to curl without gzip) | peak RSS | samples kept | **RSS / samples** |\n"+
			"|---|---:|---:|---:|---:|---:|---:|---:|\n"+
			"| %d pods, a day at 30 s: %d answers read whole, %.0f MB of JSON in all | %.2f s | %.2f s | **%.2f×** | %.2f× | %.0f MiB | %.0f MiB | **%.2f×** |\n",
		pods, len(forms), float64(answered)/1e6, testenv.Median(tool).Seconds(), testenv.Median(viaCurl).Seconds(), cpuRatio,
		testenv.Median(plainRatios), float64(testenv.Median(rss))/(1<<20), samples/(1<<20), rssRatio) + "\n" + scale.table()
	// The rows in the log too: a figure check that fails prints no metric.
	b.Logf("\n%s", rows)
	testenv.CheckFigures(b, filepath.Join("testdata", "bench-e2e.json"), map[string]float64{
		"cpu-ratio": cpuRatio, "rss-ratio": rssRatio, "cpu-exponent": exponent, "cpu-ratio-10k": scale.ratio(1)})
	testenv.WriteSection(b, filepath.Join("..", "..", "..", "docs", "benchmarks", "speed.md"), "prometheus", rows)
}

// scaleRow is the exponent row of BenchmarkE2EPrometheus: the fleet at
// each of scalePods over scaleLookback, each size a server of its own,
// answered by the tool (the child) and asked by curl with gzip, once a
// round.
type scaleRow struct {
	lookback time.Duration
	srv      [2]*httptest.Server
	replay   [2]*replay
	tool     [2][]time.Duration
	curl     [2][]time.Duration
	rss      [2][]int64
	answers  [2]int
	bytes    [2]int64
}

func newScaleRow(b *testing.B) *scaleRow {
	r := &scaleRow{lookback: scaleLookback}
	if v := os.Getenv(scaleLookbackEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Minute || d > 24*time.Hour {
			b.Fatalf("%s=%q: want a window from a minute to a day", scaleLookbackEnv, v)
		}
		r.lookback = d
	}
	for j, pods := range scalePods {
		r.replay[j] = &replay{pods: pods}
		r.srv[j] = httptest.NewServer(r.replay[j])
		b.Cleanup(r.srv[j].Close)
	}
	return r
}

// round measures each size once.
func (r *scaleRow) round(b *testing.B, curl string) {
	for j, pods := range scalePods {
		rp := r.replay[j]
		rp.mu.Lock()
		rp.forms, rp.bytes = nil, 0
		rp.mu.Unlock()
		t := testenv.Measure(b, testenv.Child("usage", "TestE2EPrometheusChild",
			e2eURLEnv+"="+r.srv[j].URL, e2ePodsEnv+"="+strconv.Itoa(pods), e2eLookbackEnv+"="+r.lookback.String()))
		rp.mu.Lock()
		forms := slices.Clone(rp.forms)
		r.answers[j], r.bytes[j] = len(forms), rp.bytes
		rp.mu.Unlock()
		r.tool[j] = append(r.tool[j], t.CPU)
		r.curl[j] = append(r.curl[j], curlCost(b, curl, r.srv[j].URL, forms, true))
		r.rss[j] = append(r.rss[j], t.MaxRSS)
	}
}

// window says d in words, as the tables do.
func window(d time.Duration) string {
	if d == 2*time.Hour {
		return "two hours"
	}
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
}

// exponents are the CPU exponents of the client and of curl from the
// smaller size to the larger: time ∝ pods^k.
func (r *scaleRow) exponents() (tool, viaCurl float64) {
	k := func(d [2][]time.Duration) float64 {
		return math.Log(float64(testenv.Median(d[1]))/float64(testenv.Median(d[0]))) / math.Log(float64(scalePods[1])/float64(scalePods[0]))
	}
	return k(r.tool), k(r.curl)
}

// ratio is the client's CPU over curl's at scalePods[j], medians of the
// rounds.
func (r *scaleRow) ratio(j int) float64 {
	return float64(testenv.Median(r.tool[j])) / float64(testenv.Median(r.curl[j]))
}

// table renders the row.
func (r *scaleRow) table() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "| %s at 30 s, every Deployment asked | pods | answers read whole, JSON written in all | client CPU | curl CPU | **CPU ratio** | peak RSS | **client's CPU exponent** | curl's |\n"+
		"|---|---:|---:|---:|---:|---:|---:|---:|---:|\n", window(r.lookback))
	tool, viaCurl := r.exponents()
	for j, pods := range scalePods {
		name, exps := "", "| | |"
		if j == 0 {
			name = "50 namespaces, owner series"
		} else {
			exps = fmt.Sprintf("| **%.2f** | %.2f |", tool, viaCurl)
		}
		t, c := testenv.Median(r.tool[j]), testenv.Median(r.curl[j])
		fmt.Fprintf(&sb, "| %s | %d | %d, %.0f MB | %.2f s | %.2f s | **%.2f×** | %.0f MiB %s\n", name, pods, r.answers[j], float64(r.bytes[j])/1e6,
			t.Seconds(), c.Seconds(), r.ratio(j), float64(testenv.Median(r.rss[j]))/(1<<20), exps)
	}
	return sb.String()
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
