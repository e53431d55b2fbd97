package main

import (
	"bytes"
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

func TestNewCmdPlan(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want planOptions
		err  string
	}{
		{
			name: "defaults",
			args: []string{"--repo", "r", "--metrics-file", "m.om"},
			want: planOptions{Repo: "r", Usage: source.Options{MetricsFile: "m.om"}, Output: "table", DefaultNamespace: "default"},
		},
		{
			name: "everything",
			args: []string{"--repo", "r", "--metrics-file", "m.om", "--at", "2026-11-30T12:00:00Z", "-o", "json",
				"--policies", "policies", "--policies", "more", "--default-namespace", "ml"},
			want: planOptions{Repo: "r", Usage: source.Options{MetricsFile: "m.om", At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, Output: "json",
				PolicyPaths: []string{"policies", "more"}, DefaultNamespace: "ml"},
		},
		{
			name: "unix seconds",
			args: []string{"--repo", "r", "--metrics-file", "m.om", "--at", "1796040000"},
			want: planOptions{Repo: "r", Usage: source.Options{MetricsFile: "m.om", At: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, Output: "table", DefaultNamespace: "default"},
		},
		{name: "no repo", args: []string{"--metrics-file", "m.om"}, err: "`--repo` is required"},
		{name: "no metrics", args: []string{"--repo", "r"}, err: "`--metrics-file` or `--prometheus-url` is required"},
		{
			name: "prometheus: every flag",
			args: []string{"--repo", "r", "--prometheus-url", "https://mimir.example/prometheus",
				"--prometheus-token-file", "/t", "--prometheus-token-env", "TOKEN", "--prometheus-user", "u", "--prometheus-password-file", "/p",
				"--prometheus-header", "X-Scope-OrgID: tenant-1", "--prometheus-header", "X-Extra:a: b",
				"--prometheus-ca-file", "/ca", "--prometheus-cert-file", "/c", "--prometheus-key-file", "/k",
				"--prometheus-insecure-skip-verify", "--prometheus-timeout", "30s", "--cluster-label", "cluster=prod-eu"},
			want: planOptions{Repo: "r", Output: "table", DefaultNamespace: "default", Usage: source.Options{Prometheus: prometheus.Config{
				URL: "https://mimir.example/prometheus", BearerTokenFile: "/t", BearerTokenEnv: "TOKEN", BasicAuthUser: "u", BasicAuthPasswordFile: "/p",
				Headers: http.Header{"X-Scope-Orgid": {"tenant-1"}, "X-Extra": {"a: b"}},
				CAFile:  "/ca", CertFile: "/c", KeyFile: "/k", InsecureSkipVerify: true, Timeout: 30 * time.Second,
			}, ClusterLabel: plan.ClusterLabel{Name: "cluster", Value: "prod-eu"}}},
		},
		{
			name: "a recording of one cluster among several",
			args: []string{"--repo", "r", "--metrics-file", "m.om", "--cluster-label", "cluster=prod-eu", "--cluster", "a", "--workload", "a:inference/chat", "--group-by", "cluster"},
			want: planOptions{Repo: "r", Usage: source.Options{MetricsFile: "m.om", Preset: preset.Kubex, ClusterLabel: plan.ClusterLabel{Name: "cluster", Value: "prod-eu"}},
				Output: "table", DefaultNamespace: "default", GroupBy: "cluster",
				Filter: filterFlags{Clusters: []string{"a"}, Workloads: []string{"a:inference/chat"}},
				filter: plan.Filter{Clusters: []string{"a"}, Workloads: []string{"a:inference/chat"}}},
		},
		{
			name: "a metrics preset",
			args: []string{"--repo", "r", "--metrics-file", "m.om", "--metrics-preset", "hami"},
			want: planOptions{Repo: "r", Usage: source.Options{MetricsFile: "m.om", Preset: preset.HAMi}, Output: "table", DefaultNamespace: "default"},
		},
		{name: "an unknown metrics preset", args: []string{"--repo", "r", "--metrics-file", "m.om", "--metrics-preset", "nvidia"},
			err: "invalid `--metrics-preset`: unknown metrics preset \"nvidia\": use kubex, hami, dcgm"},
		{name: "both sources", args: []string{"--repo", "r", "--metrics-file", "m", "--prometheus-url", "http://p"},
			err: "`--metrics-file` and `--prometheus-url` exclude each other: usage comes from one source"},
		{name: "a prometheus flag without the URL", args: []string{"--repo", "r", "--metrics-file", "m", "--prometheus-user", "a"},
			err: "`--prometheus-user` needs `--prometheus-url`"},
		{name: "a cluster that is no name", args: []string{"--repo", "r", "--metrics-file", "m", "--cluster", "a/b"},
			err: "invalid `--cluster`: cluster \"a/b\": not a cluster's name (a ClusterMap names them as DNS labels)"},
		{name: "an unknown grouping", args: []string{"--repo", "r", "--metrics-file", "m", "--group-by", "team"},
			err: "invalid `--group-by` \"team\": use workload, namespace, policy or cluster"},
		{name: "a header without a colon", args: []string{"--repo", "r", "--prometheus-url", "http://p", "--prometheus-header", "X-Scope-OrgID=a"},
			err: "invalid `--prometheus-header` \"X-Scope-OrgID=a\"…: write it as 'Name: value'"},
		{name: "a header without a colon never quotes its value", args: []string{"--repo", "r", "--prometheus-url", "http://p", "--prometheus-header", "Authorization Bearer s3cr3t"},
			err: "invalid `--prometheus-header` \"Authorization\"…: write it as 'Name: value'"},
		{name: "a cluster label without a value", args: []string{"--repo", "r", "--prometheus-url", "http://p", "--cluster-label", "cluster"},
			err: "invalid `--cluster-label` \"cluster\": write it as name=value, e.g. cluster=prod-eu"},
		{name: "a zero timeout", args: []string{"--repo", "r", "--prometheus-url", "http://p", "--prometheus-timeout", "0s"},
			err: "invalid `--prometheus-timeout` 0s: want a positive duration"},
		{name: "bad output", args: []string{"--repo", "r", "--metrics-file", "m", "-o", "yaml"}, err: "invalid `--output` \"yaml\": use table, json or markdown"},
		{name: "bad at", args: []string{"--repo", "r", "--metrics-file", "m", "--at", "yesterday"},
			err: "invalid `--at`: \"yesterday\" is neither RFC 3339 (2026-11-30T12:00:00Z) nor Unix seconds"},
		{name: "at zero", args: []string{"--repo", "r", "--metrics-file", "m", "--at", "0"},
			err: "invalid `--at`: \"0\" is not a plausible time: Unix seconds from 946684800 (2000) to 32503680000 (3000)"},
		{name: "at 1e20", args: []string{"--repo", "r", "--metrics-file", "m", "--at", "1e20"},
			err: "invalid `--at`: \"1e20\" is not a plausible time: Unix seconds from 946684800 (2000) to 32503680000 (3000)"},
		{name: "at in milliseconds", args: []string{"--repo", "r", "--metrics-file", "m", "--at", "1796040000000"},
			err: "invalid `--at`: \"1796040000000\" is not a plausible time: Unix seconds from 946684800 (2000) to 32503680000 (3000)"},
		{name: "at before 2000", args: []string{"--repo", "r", "--metrics-file", "m", "--at", "1999-12-31T23:59:59Z"},
			err: "invalid `--at`: \"1999-12-31T23:59:59Z\" is not a plausible time: use one from the year 2000 to 3000"},
		{name: "at in the year 3000", args: []string{"--repo", "r", "--metrics-file", "m", "--at", "3000-01-01T00:00:00Z"},
			err: "invalid `--at`: \"3000-01-01T00:00:00Z\" is not a plausible time: use one from the year 2000 to 3000"},
		{name: "bad log level", args: []string{"--repo", "r", "--metrics-file", "m", "--log-level", "loud"},
			err: "invalid `--log-level` \"loud\": use debug, info, warn or error"},
		{name: "unknown flag", args: []string{"--repo", "r", "--metrics", "m"}, err: "unknown flag: --metrics"},
		{name: "stray argument", args: []string{"--repo", "r", "--metrics-file", "m", "extra"}, err: `unknown command "extra" for "recommender plan"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *planOptions
			io := streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
			root := newCmdRoot(io, func(_ context.Context, o *planOptions) error {
				got = o
				return nil
			})
			root.SetArgs(append([]string{"plan"}, tt.args...))
			err := root.Execute()
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			got.IO, got.Now, got.Logger, got.effective = streams{}, nil, nil, nil
			if tt.want.Usage.Preset == "" {
				tt.want.Usage.Preset = preset.Kubex
			}
			if tt.want.Usage.Prometheus.Timeout == 0 {
				tt.want.Usage.Prometheus.Timeout = prometheus.DefaultTimeout
			}
			require.Equal(t, tt.want, *got)
		})
	}
}
