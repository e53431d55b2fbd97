package run_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/run"
	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// TestRunOutput: Observe.Output json or markdown writes the run's summary
// on Out; without it, an Out that is no terminal gets nothing, and the
// log's summary line still says how the run went.
func TestRunOutput(t *testing.T) {
	repo := gitQuickstart(t)
	base := options(repo)
	base.DryRun = true
	tests := []struct {
		name   string
		output string
		golden string
	}{
		{name: "json", output: "json", golden: "quickstart-run.json"},
		{name: "markdown", output: "markdown", golden: "quickstart-run.md"},
		{name: "nothing on an Out that is no terminal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := base
			o.Observe.Output = tt.output
			out, errOut := runOK(t, o, run.ChangesProposed)
			require.Equal(t, "changes proposed", summary(t, errOut)["outcome"])
			if tt.golden == "" {
				require.Empty(t, out)
				return
			}
			golden(t, tt.golden, []byte(stable(out, repo)))
		})
	}
	t.Run("a failed run still says so", func(t *testing.T) {
		o := options(filepath.Join(repo, "nope"))
		o.Observe.Output = "json"
		out, _, res, err := runOnce(t, o)
		require.ErrorContains(t, err, "not a git repository")
		require.Equal(t, run.Failed, res.Outcome)
		var s map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &s), out)
		require.Equal(t, "failed", s["outcome"])
		require.Contains(t, s["error"], "not a git repository")
	})
}

// promQuery asks a Prometheus server for the value of an instant query
// that must answer one sample.
func promQuery(t *testing.T, prom *testenv.Prometheus, query string) (string, bool) {
	t.Helper()
	resp, err := http.Get(prom.URL + "/api/v1/query?query=" + url.QueryEscape(query))
	require.NoError(t, err)
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&r))
	require.Equal(t, "success", r.Status)
	if len(r.Data.Result) != 1 {
		return "", false
	}
	return r.Data.Result[0].Value[1].(string), true
}

// TestRunMetrics: a run pushes its metrics to a real Pushgateway, which
// a real Prometheus scrapes; PromQL reads them back, as an alert rule
// would. The same run writes them as a textfile.
func TestRunMetrics(t *testing.T) {
	pg := testenv.StartPushgateway(t)
	if pg == nil {
		return
	}
	prom := testenv.StartScrapingPrometheus(t, pg.Addr)
	if prom == nil {
		return
	}
	repo := gitQuickstart(t)
	textfile := filepath.Join(t.TempDir(), "recommender.prom")
	o := options(repo)
	o.Observe.PushgatewayURL, o.Observe.PushgatewayJob, o.Observe.MetricsTextfile = pg.URL, "gitops-prod", textfile
	runOK(t, o, run.ChangesProposed)

	tests := []struct {
		name, query, want string
	}{
		{name: "pull requests by outcome", query: `gpu_rightsizing_pull_requests{job="gitops-prod",outcome="opened"}`, want: "4"},
		{name: "decisions by action", query: `gpu_rightsizing_decisions{job="gitops-prod",action="scaleBack"}`, want: "2"},
		{name: "the outcome", query: `gpu_rightsizing_run_outcome{job="gitops-prod",outcome="changes-proposed"}`, want: "1"},
		{name: "no problems", query: `count(gpu_rightsizing_problems{job="gitops-prod"}) or vector(0)`, want: "0"},
		{name: "GPU share requested", query: `gpu_rightsizing_requested_gpus{job="gitops-prod"} > 0`},
		{name: "the alert's expression is quiet after a success", query: `time() - gpu_rightsizing_last_success_timestamp_seconds{job="gitops-prod"} < 300`},
		{name: "duration", query: `gpu_rightsizing_run_duration_seconds{job="gitops-prod"} > 0`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			require.Eventually(t, func() bool {
				v, ok := promQuery(t, prom, tt.query)
				got = v
				return ok
			}, 30*time.Second, 200*time.Millisecond, "%s answered nothing; prometheus log:\n%s", tt.query, prom.Log())
			if tt.want != "" {
				require.Equal(t, tt.want, got)
			}
		})
	}

	b, err := os.ReadFile(textfile)
	require.NoError(t, err)
	require.Contains(t, string(b), "gpu_rightsizing_pull_requests{outcome=\"opened\"} 4\n")

	t.Run("a push that fails is a warning, not the run's failure", func(t *testing.T) {
		o := options(repo)
		o.Observe.PushgatewayURL = pg.URL + "/wrong/prefix"
		_, errOut := runOK(t, o, run.NothingToDo)
		require.Contains(t, errOut, `"msg":"the run's metrics push failed; the run's outcome stands"`)
	})
}

// TestRunWebhook: a run posts its summary to a chat webhook whose URL is
// in a file; a webhook that fails is tried again, boundedly, and is a
// warning.
func TestRunWebhook(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	var types []string
	fail := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies, types = append(bodies, string(b)), append(types, r.Header.Get("Content-Type"))
		if fail {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintln(w, "invalid_token")
		}
	}))
	defer srv.Close()
	urlFile := filepath.Join(t.TempDir(), "webhook-url")
	require.NoError(t, os.WriteFile(urlFile, []byte(srv.URL+"/services/T0/B0/secret-part\n"), 0o600))
	repo := gitQuickstart(t)
	o := options(repo)
	o.Observe.WebhookURLFile = urlFile

	runOK(t, o, run.ChangesProposed)
	require.Len(t, bodies, 1)
	require.Equal(t, "application/json", types[0])
	var msg struct{ Text string }
	require.NoError(t, json.Unmarshal([]byte(bodies[0]), &msg))
	lines := strings.Split(msg.Text, "\n")
	require.Regexp(t, `^GPU rightsizing run changes proposed: pull requests 4 opened; 2 upsize, 2 scaleBack, 2 none, 1 skipped; took [0-9.]+s$`, lines[0])
	require.Contains(t, lines, "- opened inference/Deployment/chat file://"+repo+"/.git/gpu-rightsizing/pulls/0002.md")

	fail = true
	_, errOut := runOK(t, o, run.NothingToDo)
	require.Len(t, bodies, 2, "a 4xx is not tried again")
	require.Contains(t, errOut, `"msg":"the run's webhook failed; the run's outcome stands","error":"webhook: 400 Bad Request: invalid_token (after 1 attempt(s))"`)
	require.NotContains(t, errOut, "secret-part")
}

// TestRunEvent: a run records its outcome as an Event on the CronJob
// Observe.EventCronJob names, on a real kube-apiserver; one it cannot record
// is a warning.
func TestRunEvent(t *testing.T) {
	kube := kubeenv.StartAPIServer(t, kubeenv.User{Name: "nobody"})
	if kube == nil {
		return
	}
	kube.Apply(t, []byte(`apiVersion: v1
kind: Namespace
metadata: {name: gpu-rightsizing}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: recommender, namespace: gpu-rightsizing}
spec:
  schedule: "17 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: recommender, image: recommender}]
`))
	repo := gitQuickstart(t)
	o := options(repo)
	o.Observe.EventCronJob = "gpu-rightsizing/recommender"
	o.Live.Kubeconfig = kube.Kubeconfig(t, kubeenv.Admin)
	runOK(t, o, run.ChangesProposed)
	status, body := kube.Do(t, kubeenv.Admin, http.MethodGet, "/apis/events.k8s.io/v1/namespaces/gpu-rightsizing/events", nil, "")
	require.Equal(t, http.StatusOK, status, "%s", body)
	var events struct {
		Items []struct {
			Type, Reason, Note string
			Regarding          struct{ Kind, Name, UID string }
		} `json:"items"`
	}
	require.NoError(t, json.Unmarshal(body, &events))
	require.Len(t, events.Items, 1, "%s", body)
	ev := events.Items[0]
	require.Equal(t, "Normal", ev.Type)
	require.Equal(t, "ChangesProposed", ev.Reason)
	require.Equal(t, "CronJob", ev.Regarding.Kind)
	require.NotEmpty(t, ev.Regarding.UID)
	require.Regexp(t, `^GPU rightsizing run changes proposed: pull requests 4 opened; `, ev.Note)

	o.Live.Kubeconfig = kube.Kubeconfig(t, "nobody")
	_, errOut := runOK(t, o, run.NothingToDo)
	require.Contains(t, errOut, `"msg":"the run's event failed; the run's outcome stands","error":"event: get cronjob gpu-rightsizing/recommender: cronjobs.batch \"recommender\" is forbidden`)
}
