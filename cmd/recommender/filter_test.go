package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// TestFilterFlags: the filter flags of plan, from the command line, the
// environment and the config file, and each mistake naming its flag.
func TestFilterFlags(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "recommender.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("filter:\n  namespaces: [inference, 'team-*']\n  selector: 'app in (chat,embed),!canary'\n  workloads: [inference/Deployment/chat]\n"), 0o644))
	sel, err := plan.ParseSelector("app in (chat,embed),!canary")
	require.NoError(t, err)
	fromFile := plan.Filter{Namespaces: []string{"inference", "team-*"}, Selector: sel, Workloads: []string{"inference/Deployment/chat"}}
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want plan.Filter
		err  string
	}{
		{name: "none"},
		{name: "flags", args: []string{"--namespace", "inference", "--namespace", "team-*", "--selector", "app in (chat,embed),!canary",
			"--workload", "inference/Deployment/chat"}, want: fromFile},
		{name: "config file", args: []string{"--config", cfg}, want: fromFile},
		{name: "environment", env: map[string]string{"RECOMMENDER_NAMESPACE": "inference,team-*", "RECOMMENDER_SELECTOR": "app in (chat,embed),!canary",
			"RECOMMENDER_WORKLOAD": "inference/Deployment/chat"}, want: fromFile},
		{name: "a flag wins over the file", args: []string{"--config", cfg, "--workload", "embed"},
			want: plan.Filter{Namespaces: fromFile.Namespaces, Selector: sel, Workloads: []string{"embed"}}},
		{name: "bad selector", args: []string{"--selector", "app in (chat"}, err: "invalid `--selector`: label selector \"app in (chat\": "},
		{name: "bad namespace pattern", args: []string{"--namespace", "team-["}, err: "invalid `--namespace`: namespace \"team-[\": bad pattern: syntax error in pattern"},
		{name: "bad workload", args: []string{"--workload", "a/b/c/d"}, err: "invalid `--workload`: workload \"a/b/c/d\": use namespace/Kind/name, namespace/name or name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			var got *planOptions
			io := streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
			root := newCmdRoot(io, func(_ context.Context, o *planOptions) error {
				got = o
				return nil
			})
			root.SetArgs(append([]string{"plan", "--repo", "r", "--metrics-file", "m.om"}, tt.args...))
			err := root.Execute()
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				var fe *config.FlagError
				require.ErrorAs(t, err, &fe, "a usage error, exit 2")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got.filter)
		})
	}
}

// TestFilterUsageErrors: a bad selector exits 2 for plan and run alike,
// naming the flag, or the config key it came from.
func TestFilterUsageErrors(t *testing.T) {
	for _, cmd := range []string{"plan", "run"} {
		_, errOut, code := cli(t, cmd, "--repo", quickstartRepo, "--metrics-file", quickstartMetrics, "--selector", "app=(x)")
		require.Equal(t, exitUsage, code, errOut)
		require.Contains(t, errOut, "invalid `--selector`: label selector \"app=(x)\"")
	}
	cfg := filepath.Join(t.TempDir(), "recommender.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("filter:\n  selector: 'app=(x)'\n"), 0o644))
	_, errOut, code := cli(t, "plan", "--config", cfg, "--repo", quickstartRepo, "--metrics-file", quickstartMetrics)
	require.Equal(t, exitUsage, code, errOut)
	require.Contains(t, errOut, "`--selector` is filter.selector at "+cfg+":2:13")
}

// TestPlanFilter: plan shows only the workloads the filter keeps.
func TestPlanFilter(t *testing.T) {
	out, errOut, code := cli(t, "plan", "--repo", quickstartRepo, "--metrics-file", quickstartMetrics, "--workload", "chat", "--workload", "inference/embed", "-o", "json")
	require.Equal(t, exitOK, code, errOut)
	require.Contains(t, out, `"name": "chat"`)
	require.Contains(t, out, `"name": "embed"`)
	require.NotContains(t, out, `"name": "rerank"`)
}

// TestPlanSelectsNothing: a filter that admits no workload, or a
// repository without a policy, still plans (exit 0: nothing is wrong
// with the fleet) but says so on stderr, after the empty table; one that
// admits some says nothing.
func TestPlanSelectsNothing(t *testing.T) {
	noPolicies := t.TempDir()
	require.NoError(t, os.CopyFS(noPolicies, os.DirFS(filepath.Join(quickstartRepo, "apps"))))
	tests := []struct {
		name string
		args []string
		warn string
	}{
		{name: "a namespace glob that matches none", args: []string{"--repo", quickstartRepo, "--namespace", "ml-*"},
			warn: "warning: the filter (--namespace ml-*) admits none of the repository's 8 workload(s)\n"},
		{name: "a repository without a policy", args: []string{"--repo", noPolicies},
			warn: "warning: no policy found in the repository: no workload is governed"},
		{name: "a filter that admits some", args: []string{"--repo", quickstartRepo, "--namespace", "inf*"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := cli(t, append([]string{"plan", "--metrics-file", quickstartMetrics}, tt.args...)...)
			require.Equal(t, exitOK, code, errOut)
			if tt.warn == "" {
				require.NotContains(t, errOut, "warning:")
				return
			}
			require.Contains(t, errOut, tt.warn)
		})
	}
}
