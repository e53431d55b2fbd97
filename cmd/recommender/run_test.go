package main

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/testenv"
	"github.com/gpu-rightsizing/recommender/internal/testenv/forge"
)

// TestRunUsageMistakes: a mistake in run's settings is a usage mistake
// (exit 2) found before anything is cloned; internal/run's tests run the
// rest, without the command line.
func TestRunUsageMistakes(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		err  string
	}{
		{name: "an unknown forge", args: []string{"--scm", "gitea", "--repo", t.TempDir(), "--metrics-file", "x"},
			err: "invalid `--scm` \"gitea\": use local, github or gitlab"},
		{name: "a repository without its owner", args: []string{"--scm", "github", "--github-repo", "acme", "--metrics-file", "x"},
			err: "`--github-repo` must be owner/name, got \"acme\""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := cli(t, append([]string{"run"}, tt.args...)...)
			require.Equal(t, exitUsage, code)
			require.Contains(t, errOut, tt.err+"\n\nRun `recommender run --help` for usage.\n")
			require.Empty(t, out)
		})
	}
}

// quickstartFiles is the quickstart's manifests and policies, for a repository on
// a git server.
func quickstartFiles(t *testing.T) map[string]string {
	return testenv.DirFiles(t, quickstartRepo, ".om")
}

// TestErrorLineEscapesWhatAServerSaid: a forge's error message reaches the
// final error line with its control bytes escaped, so that no server can
// colour or rewrite the terminal.
func TestErrorLineEscapesWhatAServerSaid(t *testing.T) {
	git := testenv.NewGitServer(t)
	git.NewRepo(t, "acme/gitops", quickstartFiles(t))
	fake := forge.NewFakeGitHub(t, git, "acme", "gitops")
	fake.Fail(10, forge.GitHubFault{Status: http.StatusBadRequest, Body: `{"message":"Not Found \u001b[2J\u001b[31mrepository gone\u0007"}`})
	tokenFile := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte(fake.Token+"\n"), 0o600))
	var out, errOut bytes.Buffer
	code := Main([]string{"run", "--scm", "github", "--github-repo", "acme/gitops", "--github-url", fake.BaseURL(),
		"--github-token-file", tokenFile, "--metrics-file", "../../examples/quickstart/metrics.om"}, &out, &errOut)
	require.Equal(t, exitError, code, errOut.String())
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	last := lines[len(lines)-1]
	require.True(t, strings.HasPrefix(last, "error: "), last)
	require.Contains(t, last, `\x1b[2J\x1b[31mrepository gone\a`)
	require.NotContains(t, errOut.String(), "\x1b")
	require.NotContains(t, errOut.String(), "\a")
}
