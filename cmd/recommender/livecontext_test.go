package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConfigValidateLiveContexts: `live.contexts` names a kubeconfig
// context per cluster. validate refuses a malformed entry and a job over
// several clusters with one of them without a context; --check-files
// finds a context the kubeconfig lacks, and a cluster of the local
// repository's ClusterMap that has none.
func TestConfigValidateLiveContexts(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- {name: eu, cluster: {server: "https://127.0.0.1:1"}}
- {name: us, cluster: {server: "https://127.0.0.1:2"}}
users:
- {name: job, user: {token: t}}
contexts:
- {name: ctx-eu, context: {cluster: eu, user: job}}
- {name: ctx-us, context: {cluster: us, user: job}}
current-context: ctx-eu
`), 0o600))
	recording := filepath.Join(dir, "fleet.om")
	require.NoError(t, os.WriteFile(recording, []byte("# EOF\n"), 0o644))
	repo, err := filepath.Abs("../../examples/clusters")
	require.NoError(t, err)
	head := "scm: local\nrepo: " + repo + "\nmetrics: {file: " + recording + "}\nkubeconfig: " + kubeconfig + "\n"
	tests := []struct {
		name       string
		config     string
		checkFiles bool
		errs       []string
	}{
		{name: "a context per cluster", config: head + "live: {enabled: true, namespaces: [inference], contexts: [prod-eu=ctx-eu, prod-us=ctx-us]}\n", checkFiles: true},
		{name: "a job of one cluster needs none", config: head + "filter: {clusters: [prod-eu]}\nlive: {enabled: true, namespaces: [inference]}\n"},
		{name: "not CLUSTER=CONTEXT", config: head + "live: {enabled: true, namespaces: [inference], contexts: [prod-eu]}\n",
			errs: []string{"`--live-context` \"prod-eu\": want CLUSTER=CONTEXT", "`--live-context` is live.contexts at {file}:5:"}},
		{name: "a cluster named twice", config: head + "live: {enabled: true, namespaces: [inference], contexts: [prod-eu=ctx-eu, prod-eu=ctx-us]}\n",
			errs: []string{"`--live-context` names cluster prod-eu twice"}},
		{name: "a job of two clusters, one without a context",
			config: head + "filter: {clusters: [prod-eu, prod-us]}\nlive: {enabled: true, namespaces: [inference], contexts: [prod-eu=ctx-eu]}\n",
			errs:   []string{"`--live` over clusters prod-eu, prod-us needs a `--live-context` for prod-us: CLUSTER=CONTEXT of the kubeconfig"}},
		{name: "a context the kubeconfig lacks", config: head + "live: {enabled: true, namespaces: [inference], contexts: [prod-eu=ctx-eu, prod-us=ctx-asia]}\n",
			checkFiles: true, errs: []string{"`--live-context` prod-us=ctx-asia: ", "ctx-asia"}},
		{name: "a mapped cluster without a context", config: head + "live: {enabled: true, namespaces: [inference], contexts: [prod-eu=ctx-eu]}\n",
			checkFiles: true, errs: []string{"`--live-context` names no context for cluster prod-us of the ClusterMap in " + repo + ": its urgent upsizes could not go live"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfig(t, tt.config)
			args := []string{"config", "validate", "--config", file}
			if tt.checkFiles {
				args = append(args, "--check-files")
			}
			var out, errOut bytes.Buffer
			code := Main(args, &out, &errOut)
			if tt.errs == nil {
				require.Equal(t, exitOK, code, errOut.String())
				return
			}
			require.Equal(t, exitUsage, code, out.String())
			for _, e := range tt.errs {
				require.Contains(t, errOut.String(), strings.ReplaceAll(e, "{file}", file))
			}
		})
	}
}
