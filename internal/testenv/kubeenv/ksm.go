package kubeenv

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
)

// KubeStateMetricsVersion is the kube-state-metrics the usage tests read:
// hack/kube-state-metrics builds it from its module (a test checks that they
// agree) and scripts/install-test-deps.sh caches it beside the kube-apiserver.
const KubeStateMetricsVersion = "v2.20.0"

// KubeStateMetricsPath returns where scripts/install-test-deps.sh keeps the
// kube-state-metrics it builds.
func KubeStateMetricsPath() (string, error) {
	return cachePath("kube-state-metrics", KubeStateMetricsVersion)
}

// ksmResource is what Sync needs to know of a resource kube-state-metrics
// watches: where the API server lists it, and the series of
// kube-state-metrics that names each object (every object has one: the
// API server sets creationTimestamp).
type ksmResource struct {
	path       string // the collection under /api or /apis, cluster-wide
	namespaced bool
	metric     string // kube_<kind>_created
	label      string // the label holding the object's name
}

// ksmResources are the resources StartKubeStateMetrics can watch.
var ksmResources = map[string]ksmResource{
	"pods":         {"/api/v1/pods", true, "kube_pod_created", "pod"},
	"nodes":        {"/api/v1/nodes", false, "kube_node_created", "node"},
	"namespaces":   {"/api/v1/namespaces", false, "kube_namespace_created", "namespace"},
	"replicasets":  {"/apis/apps/v1/replicasets", true, "kube_replicaset_created", "replicaset"},
	"deployments":  {"/apis/apps/v1/deployments", true, "kube_deployment_created", "deployment"},
	"statefulsets": {"/apis/apps/v1/statefulsets", true, "kube_statefulset_created", "statefulset"},
	"daemonsets":   {"/apis/apps/v1/daemonsets", true, "kube_daemonset_created", "daemonset"},
	"jobs":         {"/apis/batch/v1/jobs", true, "kube_job_created", "job_name"},
}

// DefaultKubeStateMetricsResources returns the resources kube-state-metrics
// watches when the options name none: those GPU workloads are made of.
func DefaultKubeStateMetricsResources() []string {
	return []string{"pods", "nodes", "replicasets", "deployments", "statefulsets", "daemonsets", "jobs"}
}

// KubeStateMetricsOptions choose what kube-state-metrics watches and
// exports. The allowlists are its flags' values, written as its docs tell
// users to (docs/developer/cli-arguments.md): "pods=[kai.scheduler/queue],nodes=[*]".
type KubeStateMetricsOptions struct {
	// Resources is --resources; nil means DefaultKubeStateMetricsResources.
	// Each must be one of pods, nodes, namespaces, replicasets,
	// deployments, statefulsets, daemonsets, jobs.
	Resources []string
	// LabelsAllowlist is --metric-labels-allowlist: the labels
	// kube_<kind>_labels carries. "" exports none, as upstream's default.
	LabelsAllowlist string
	// AnnotationsAllowlist is --metric-annotations-allowlist, for
	// kube_<kind>_annotations.
	AnnotationsAllowlist string
	// Args are further flags, passed last. One that narrows what is
	// watched (--namespaces) makes Sync wait in vain for the rest.
	Args []string
}

// KubeStateMetrics is the real kube-state-metrics, built from its module,
// running as a process out of cluster against one APIServer as Admin.
type KubeStateMetrics struct {
	// URL is the base URL of its metrics server, http://127.0.0.1:PORT; the
	// series are at URL + "/metrics".
	URL string
	// Addr is the metrics server's host:port, a scrape target for
	// testenv.StartScrapingPrometheus.
	Addr string
	// TelemetryURL is the base URL of its own metrics
	// (kube_state_metrics_*), http://127.0.0.1:PORT.
	TelemetryURL string

	kube      *APIServer
	resources []string
	client    *http.Client
	logPath   string
}

// StartKubeStateMetrics starts kube-state-metrics against kube with a
// kubeconfig for Admin, its two servers on free loopback ports, and
// stops it when the test ends. It returns once its output names every
// object of the watched resources that kube holds (Sync): create the
// objects first, and the first scrape has them, statuses included. A
// missing binary skips the test, or fails it under testenv.StrictEnv.
func StartKubeStateMetrics(t testing.TB, kube *APIServer, opts KubeStateMetricsOptions) *KubeStateMetrics {
	t.Helper()
	resources := opts.Resources
	if resources == nil {
		resources = DefaultKubeStateMetricsResources()
	}
	for _, r := range resources {
		if _, ok := ksmResources[r]; !ok {
			t.Fatalf("kube-state-metrics: resource %q is not one the harness knows (%s)", r, strings.Join(slices.Sorted(maps.Keys(ksmResources)), ", "))
			return nil
		}
	}
	bin, err := KubeStateMetricsPath()
	if err == nil {
		err = executable(bin)
	}
	if err != nil {
		testenv.Missing(t, "kube-state-metrics "+KubeStateMetricsVersion, err)
		return nil
	}

	began := time.Now()
	dir := t.TempDir()
	k := &KubeStateMetrics{
		kube:      kube,
		resources: slices.Clone(resources),
		client:    &http.Client{Timeout: 10 * time.Second},
		logPath:   filepath.Join(dir, "kube-state-metrics.log"),
	}
	logFile, err := os.Create(k.logPath)
	if err != nil {
		t.Fatalf("creating kube-state-metrics' log: %v", err)
		return nil
	}
	t.Cleanup(func() { logFile.Close() })
	args := []string{
		"--kubeconfig=" + kube.Kubeconfig(t, Admin),
		"--host=127.0.0.1",
		"--telemetry-host=127.0.0.1",
		"--resources=" + strings.Join(resources, ","),
	}
	if opts.LabelsAllowlist != "" {
		args = append(args, "--metric-labels-allowlist="+opts.LabelsAllowlist)
	}
	if opts.AnnotationsAllowlist != "" {
		args = append(args, "--metric-annotations-allowlist="+opts.AnnotationsAllowlist)
	}
	args = append(args, opts.Args...)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	p, err := k.start(ctx, bin, args, logFile)
	if err != nil {
		t.Fatalf("starting kube-state-metrics: %v\n%s", err, tailFile(k.logPath, 6000))
		return nil
	}
	t.Cleanup(func() {
		k.client.CloseIdleConnections()
		if err := p.stop(5 * time.Second); err != nil {
			t.Errorf("stopping kube-state-metrics: %v", err)
		}
		if t.Failed() {
			t.Logf("kube-state-metrics log (%s), last lines:\n%s", k.logPath, tailFile(k.logPath, 6000))
		}
	})
	k.Sync(t)
	t.Logf("kube-state-metrics %s ready at %s in %v", KubeStateMetricsVersion, k.URL, time.Since(began).Round(time.Millisecond))
	return k
}

// start runs the binary on free loopback ports until one pair binds, and
// waits until both servers answer /metrics.
func (k *KubeStateMetrics) start(ctx context.Context, bin string, args []string, log io.Writer) (*process, error) {
	var lastErr error
	for attempt := range testenv.BindAttempts {
		port, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		telemetry, err := testenv.FreePort()
		if err != nil {
			return nil, err
		}
		k.Addr = "127.0.0.1:" + strconv.Itoa(port)
		k.URL = "http://" + k.Addr
		k.TelemetryURL = "http://127.0.0.1:" + strconv.Itoa(telemetry)
		fmt.Fprintf(log, "testenv: starting kube-state-metrics on %s (attempt %d)\n", k.URL, attempt+1)
		p, err := startProcess("kube-state-metrics", log, bin,
			append([]string{"--port=" + strconv.Itoa(port), "--telemetry-port=" + strconv.Itoa(telemetry)}, args...)...)
		if err != nil {
			return nil, err
		}
		err = p.waitFor(ctx, "it served metrics", func() bool {
			for _, u := range []string{k.URL, k.TelemetryURL} {
				code, _, err := k.get(ctx, u+"/metrics", "")
				if err != nil || code != http.StatusOK {
					return false
				}
			}
			return true
		})
		kept, retry, err := p.settle(err)
		if !retry {
			return kept, err
		}
		lastErr = err
	}
	return nil, lastErr
}

func (k *KubeStateMetrics) get(ctx context.Context, u, accept string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := k.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, fmt.Errorf("reading GET %s: %w", u, err)
	}
	return resp.StatusCode, b, nil
}

// openMetricsAccept is what Prometheus (2.42, Debian's) asks a target for:
// kube-state-metrics then answers in OpenMetrics.
const openMetricsAccept = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"

// Scrape returns kube-state-metrics' series as a plain GET of /metrics
// gets them: the Prometheus text format, byte for byte as it wrote them.
func (k *KubeStateMetrics) Scrape(t testing.TB) []byte {
	t.Helper()
	return k.scrape(t, "")
}

// ScrapeOpenMetrics returns kube-state-metrics' series as Prometheus's
// scrape gets them: it asks for OpenMetrics, which kube-state-metrics
// writes (counters' samples end in _total, "# EOF" last). This is the
// input testenv.OpenMetricsRecording takes.
func (k *KubeStateMetrics) ScrapeOpenMetrics(t testing.TB) []byte {
	t.Helper()
	return k.scrape(t, openMetricsAccept)
}

func (k *KubeStateMetrics) scrape(t testing.TB, accept string) []byte {
	t.Helper()
	code, body, err := k.get(t.Context(), k.URL+"/metrics", accept)
	if err != nil {
		t.Fatalf("scraping kube-state-metrics: %v", err)
	}
	if code != http.StatusOK {
		t.Fatalf("scraping kube-state-metrics: GET /metrics answered %d: %s", code, testenv.Tail(string(body), 2000))
	}
	return body
}

// Samples returns one scrape (Scrape), parsed.
func (k *KubeStateMetrics) Samples(t testing.TB) testenv.Samples {
	t.Helper()
	s, err := testenv.ParseText(k.Scrape(t))
	if err != nil {
		t.Fatalf("kube-state-metrics: %v", err)
	}
	return s
}

// Recording scrapes kube-state-metrics once, in OpenMetrics, and returns
// a recording that repeats that scrape at each of times (increasing):
// kube-state-metrics' view as a recording of a steady cluster.
func (k *KubeStateMetrics) Recording(t testing.TB, times ...time.Time) []byte {
	t.Helper()
	om := k.ScrapeOpenMetrics(t)
	scrapes := make([]testenv.TimedScrape, len(times))
	for i, at := range times {
		scrapes[i] = testenv.TimedScrape{At: at, OpenMetrics: om}
	}
	b, err := testenv.OpenMetricsRecording(scrapes...)
	if err != nil {
		t.Fatalf("recording kube-state-metrics: %v", err)
	}
	return b
}

// WaitFor scrapes until done holds of the samples, for at most 30
// seconds, and returns them: for a change kube-state-metrics has yet to
// see (a label, an annotation, a node's capacity). what names the wait in
// the failure.
func (k *KubeStateMetrics) WaitFor(t testing.TB, what string, done func(testenv.Samples) bool) testenv.Samples {
	t.Helper()
	return k.poll(t, what, func(s testenv.Samples) (bool, string) { return done(s), "" })
}

// poll scrapes until done holds, for at most settle; done's second
// result says, when it does not hold, what is missing.
func (k *KubeStateMetrics) poll(t testing.TB, what string, done func(testenv.Samples) (bool, string)) testenv.Samples {
	t.Helper()
	deadline := time.Now().Add(settle)
	for {
		s := k.Samples(t)
		ok, missing := done(s)
		if ok {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-state-metrics: not there after %s: %s %s", settle, what, missing)
			return s
		}
		select {
		case <-t.Context().Done():
			t.Fatalf("kube-state-metrics: waiting for %s: %v", what, t.Context().Err())
			return s
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Sync waits until kube-state-metrics' output names exactly the objects of
// the watched resources that the API server holds now, and each pod in
// the phase the server has for it; it returns that output, parsed. Other
// changes to an object (its labels, say) need WaitFor.
func (k *KubeStateMetrics) Sync(t testing.TB) testenv.Samples {
	t.Helper()
	want := map[string][]string{} // resource → its objects, sorted
	for _, r := range k.resources {
		objs, err := k.listed(t.Context(), r)
		if err != nil {
			t.Fatalf("kube-state-metrics: %v", err)
			return nil
		}
		want[r] = objs
	}
	return k.poll(t, "the objects the API server holds", func(s testenv.Samples) (bool, string) {
		for _, r := range k.resources {
			if got := exported(s, r); !slices.Equal(got, want[r]) {
				return false, fmt.Sprintf("(%s: the API server holds %q, kube-state-metrics exports %q)", r, want[r], got)
			}
		}
		return true, ""
	})
}

// listed returns the objects of resource r on the API server, each as
// "namespace/name", and a pod as "namespace/name uid phase".
func (k *KubeStateMetrics) listed(ctx context.Context, r string) ([]string, error) {
	res := ksmResources[r]
	status, body, err := k.kube.do(ctx, Admin, http.MethodGet, res.path, nil, "")
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("listing %s: %d %s", r, status, statusMessage(body))
	}
	var list struct {
		Items []struct {
			Metadata struct {
				Namespace string `json:"namespace"`
				Name      string `json:"name"`
				UID       string `json:"uid"`
			} `json:"metadata"`
			Status struct {
				Phase string `json:"phase"`
			} `json:"status"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("decoding the list of %s: %w", r, err)
	}
	out := []string{}
	for _, o := range list.Items {
		id := o.Metadata.Namespace + "/" + o.Metadata.Name
		if r == "pods" {
			id += " " + o.Metadata.UID + " " + o.Status.Phase
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// exported returns the objects of resource r that samples name, as listed
// names them.
func exported(s testenv.Samples, r string) []string {
	res := ksmResources[r]
	phases := map[string]string{} // pod uid → its phase
	if r == "pods" {
		for _, p := range s.Find("kube_pod_status_phase") {
			if p.Value == 1 {
				phases[p.Labels["uid"]] = p.Labels["phase"]
			}
		}
	}
	out := []string{}
	for _, c := range s.Find(res.metric) {
		ns := c.Labels["namespace"]
		if !res.namespaced {
			ns = ""
		}
		id := ns + "/" + c.Labels[res.label]
		if r == "pods" {
			id += " " + c.Labels["uid"] + " " + phases[c.Labels["uid"]]
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Log returns what kube-state-metrics has printed so far.
func (k *KubeStateMetrics) Log() string {
	b, err := os.ReadFile(k.logPath)
	if err != nil {
		return fmt.Sprintf("reading kube-state-metrics' log: %v", err)
	}
	return string(b)
}
