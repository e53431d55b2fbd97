package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestRunOutputFromTheEnvironment: run's --output, like every setting,
// comes from the config's environment too; internal/run's tests hold
// each output to its golden file.
func TestRunOutputFromTheEnvironment(t *testing.T) {
	repo := gitQuickstart(t)
	t.Setenv("RECOMMENDER_OUTPUT", "json")
	out, errOut, code := cli(t, "run", "--repo", repo, "--metrics-file", quickstartMetrics, "--dry-run")
	require.Equal(t, exitOK, code, errOut)
	var s map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &s), out)
	require.Equal(t, "changes-proposed", s["outcome"])
	require.Equal(t, "changes proposed", summary(t, errOut)["outcome"])
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
