package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// stable replaces what changes from run to run in a summary — when it
// started, how long it took, the temporary repository — so that it
// compares with a golden file.
func stable(s, repo string) string {
	s = strings.ReplaceAll(s, repo, "REPO")
	s = regexp.MustCompile(`"startedAt": "[^"]*"`).ReplaceAllString(s, `"startedAt": "START"`)
	s = regexp.MustCompile(`"durationSeconds": [0-9.e-]+`).ReplaceAllString(s, `"durationSeconds": 1.5`)
	return regexp.MustCompile(`(\*\*|written\)) in [0-9.]+s`).ReplaceAllString(s, "$1 in 1.5s")
}

// TestRunOutput: `run --output json|markdown` writes the run's summary on
// stdout; without --output, a stdout that is no terminal gets nothing,
// and the log's summary line still says how the run went.
func TestRunOutput(t *testing.T) {
	repo := gitQuickstart(t)
	base := []string{"run", "--repo", repo, "--metrics-file", quickstartMetrics, "--dry-run"}
	tests := []struct {
		name   string
		args   []string
		golden string
	}{
		{name: "json", args: []string{"--output", "json"}, golden: "quickstart-run.json"},
		{name: "markdown", args: []string{"-o", "markdown"}, golden: "quickstart-run.md"},
		{name: "from the config's environment", args: []string{}, golden: "quickstart-run.json"},
		{name: "nothing on a stdout that is no terminal", args: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name == "from the config's environment" {
				t.Setenv("RECOMMENDER_OUTPUT", "json")
			}
			out, errOut, code := cli(t, append(base, tt.args...)...)
			require.Equal(t, exitOK, code, errOut)
			require.Equal(t, "changes proposed", summary(t, errOut)["outcome"])
			if tt.golden == "" {
				require.Empty(t, out)
				return
			}
			golden(t, tt.golden, []byte(stable(out, repo)))
		})
	}
	t.Run("a failed run still says so", func(t *testing.T) {
		out, _, code := cli(t, "run", "--repo", filepath.Join(repo, "nope"), "--metrics-file", quickstartMetrics, "-o", "json")
		require.Equal(t, exitError, code)
		var s map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &s), out)
		require.Equal(t, "failed", s["outcome"])
		require.Contains(t, s["error"], "not a git repository")
	})
	t.Run("a bad format is a usage mistake", func(t *testing.T) {
		_, errOut, code := cli(t, append(base, "--output", "yaml")...)
		require.Equal(t, exitUsage, code)
		require.Contains(t, errOut, "invalid `--output` \"yaml\": use table, json or markdown")
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
	_, errOut, code := cli(t, "run", "--repo", repo, "--metrics-file", quickstartMetrics,
		"--pushgateway-url", pg.URL, "--pushgateway-job", "gitops-prod", "--metrics-textfile", textfile)
	require.Equal(t, exitOK, code, errOut)

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
		_, errOut, code := cli(t, "run", "--repo", repo, "--metrics-file", quickstartMetrics, "--pushgateway-url", pg.URL+"/wrong/prefix")
		require.Equal(t, exitOK, code, errOut)
		require.Contains(t, errOut, `"msg":"the run's metrics push failed; the run's outcome stands"`)
	})
	t.Run("a bad URL is a usage mistake", func(t *testing.T) {
		_, errOut, code := cli(t, "run", "--repo", repo, "--metrics-file", quickstartMetrics, "--pushgateway-url", "pushgateway:9091")
		require.Equal(t, exitUsage, code)
		require.Contains(t, errOut, "`--pushgateway-url`: pushgateway URL")
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
	args := []string{"run", "--repo", repo, "--metrics-file", quickstartMetrics, "--webhook-url-file", urlFile}

	_, errOut, code := cli(t, args...)
	require.Equal(t, exitOK, code, errOut)
	require.Len(t, bodies, 1)
	require.Equal(t, "application/json", types[0])
	var msg struct{ Text string }
	require.NoError(t, json.Unmarshal([]byte(bodies[0]), &msg))
	lines := strings.Split(msg.Text, "\n")
	require.Regexp(t, `^GPU rightsizing run changes proposed: pull requests 4 opened; 2 upsize, 2 scaleBack, 2 none, 1 skipped; took [0-9.]+s$`, lines[0])
	require.Contains(t, lines, "- opened inference/Deployment/chat file://"+repo+"/.git/gpu-rightsizing/pulls/0002.md")

	fail = true
	_, errOut, code = cli(t, args...)
	require.Equal(t, exitOK, code, errOut)
	require.Len(t, bodies, 2, "a 4xx is not tried again")
	require.Contains(t, errOut, `"msg":"the run's webhook failed; the run's outcome stands","error":"webhook: 400 Bad Request: invalid_token (after 1 attempt(s))"`)
	require.NotContains(t, errOut, "secret-part")
}

// TestRunEvent: a run records its outcome as an Event on the CronJob
// --event-cronjob names, on a real kube-apiserver; one it cannot record
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
	args := []string{"run", "--repo", repo, "--metrics-file", quickstartMetrics, "--event-cronjob", "gpu-rightsizing/recommender"}
	_, errOut, code := cli(t, append(args, "--kubeconfig", kube.Kubeconfig(t, kubeenv.Admin))...)
	require.Equal(t, exitOK, code, errOut)
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

	_, errOut, code = cli(t, append(args, "--kubeconfig", kube.Kubeconfig(t, "nobody"))...)
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, errOut, `"msg":"the run's event failed; the run's outcome stands","error":"event: get cronjob gpu-rightsizing/recommender: cronjobs.batch \"recommender\" is forbidden`)
}

// TestObserveFlagErrors: a mistake in what a run should tell about itself
// is a usage mistake found before the run does anything, and no secret is
// quoted.
func TestObserveFlagErrors(t *testing.T) {
	badURL := filepath.Join(t.TempDir(), "url")
	require.NoError(t, os.WriteFile(badURL, []byte("hooks.slack.com/services/secret-part\n"), 0o600))
	t.Setenv("HOOK", "ftp://hooks.example/secret-part")
	tests := []struct {
		name string
		args []string
		err  string
	}{
		{name: "an unknown output", args: []string{"-o", "yaml"}, err: "invalid `--output` \"yaml\": use table, json or markdown"},
		{name: "a pushgateway without a scheme", args: []string{"--pushgateway-url", "pushgateway:9091"},
			err: "`--pushgateway-url`: pushgateway URL pushgateway:9091: want http:// or https:// and a host"},
		{name: "an empty job", args: []string{"--pushgateway-url", "http://pg:9091", "--pushgateway-job", ""}, err: "`--pushgateway-job` must not be empty"},
		{name: "a missing webhook file", args: []string{"--webhook-url-file", "/nonexistent/url"}, err: "`--webhook-url-file`: read /nonexistent/url: no such file or directory"},
		{name: "a webhook file without a URL", args: []string{"--webhook-url-file", badURL},
			err: "the webhook URL in the file " + badURL + ": want http:// or https:// and a host"},
		{name: "a webhook variable without a URL", args: []string{"--webhook-url-env", "HOOK"},
			err: "the webhook URL in the environment variable HOOK: want http:// or https:// and a host"},
		{name: "an unset webhook variable", args: []string{"--webhook-url-env", "NO_SUCH_HOOK"},
			err: "the webhook URL in the environment variable NO_SUCH_HOOK: want http:// or https:// and a host"},
		{name: "both webhook flags", args: []string{"--webhook-url-file", badURL, "--webhook-url-env", "HOOK"},
			err: "`--webhook-url-file` and `--webhook-url-env` exclude each other"},
		{name: "a CronJob without a namespace", args: []string{"--event-cronjob", "recommender"}, err: "`--event-cronjob` \"recommender\": want NAMESPACE/NAME"},
		{name: "a CronJob with a bad name", args: []string{"--event-cronjob", "ns/Bad_Name"}, err: "`--event-cronjob` name \"Bad_Name\": "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := cli(t, append([]string{"run", "--repo", "/nonexistent", "--metrics-file", quickstartMetrics}, tt.args...)...)
			require.Equal(t, exitUsage, code, errOut)
			require.Contains(t, errOut, tt.err)
			require.NotContains(t, errOut, "secret-part")
			require.Empty(t, out)
		})
	}
}
