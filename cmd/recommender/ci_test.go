package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

// ciEnv stands for the variables a CI system sets, for the command lines
// below to be expanded as its shell would.
var ciEnv = map[string]string{
	"GITHUB_REPOSITORY": "acme/gitops", "INPUT_BASE": "main", "INPUT_ARGS": "--dry-run --label gpu",
	"GITHUB_STEP_SUMMARY": "/tmp/summary.md",
	"CI_SERVER_URL":       "https://gitlab.example.com", "CI_PROJECT_PATH": "platform/gitops", "CI_DEFAULT_BRANCH": "main",
}

// shellWords expands $VAR and ${VAR} from ciEnv and splits a command line
// into words as a shell would for these simple lines: double quotes keep
// a word whole, an unquoted expansion splits, a redirection ends the
// command.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	for _, m := range regexp.MustCompile(`"[^"]*"|[^\s"]+`).FindAllString(line, -1) {
		if m == ">" || m == ">>" {
			break
		}
		expanded := os.Expand(strings.Trim(m, `"`), func(v string) string {
			val, ok := ciEnv[v]
			require.True(t, ok, "%s is not a variable the CI sets", v)
			return val
		})
		if strings.HasPrefix(m, `"`) {
			words = append(words, expanded)
		} else {
			words = append(words, strings.Fields(expanded)...)
		}
	}
	return words
}

// parseRun parses a `recommender run` command line as run does, up to
// what it would run.
func parseRun(t *testing.T, line string) *runOptions {
	t.Helper()
	args := shellWords(t, line)
	require.Equal(t, []string{"recommender", "run"}, args[:2], line)
	var got *runOptions
	logger := func() (*slog.Logger, error) { return slog.New(slog.DiscardHandler), nil }
	cmd := newCmdRun(streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, logger, func(_ context.Context, o *runOptions) error {
		got = o
		return nil
	})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	cmd.SetArgs(args[2:])
	require.NoError(t, cmd.Execute(), line)
	return got
}

func readYAML(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, yaml.Unmarshal(b, &doc), path)
	return doc
}

// lastRunLine is the last line of a script that runs the recommender.
func lastRunLine(t *testing.T, script string) string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(script), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	require.True(t, strings.HasPrefix(last, "recommender run "), "the script ends with the run: %q", last)
	return last
}

// TestCIRun holds the GitHub Action, its example workflow and the GitLab
// CI template to YAML that parses, to the inputs they name, and to
// command lines that `run` accepts: a renamed flag breaks them here, not
// in a user's pipeline.
func TestCIRun(t *testing.T) {
	// The usage source comes from the environment in both (an input of the
	// action, a CI/CD variable in GitLab).
	t.Setenv("RECOMMENDER_PROMETHEUS_URL", "http://prometheus.monitoring:9090")
	action := readYAML(t, "../../action.yml")

	t.Run("GitHub Action", func(t *testing.T) {
		runs := action["runs"].(map[string]any)
		require.Equal(t, "composite", runs["using"])
		inputs := action["inputs"].(map[string]any)
		steps := runs["steps"].([]any)
		var script string
		for _, s := range steps {
			step := s.(map[string]any)
			if run, ok := step["run"].(string); ok {
				require.Equal(t, "bash", step["shell"], "a composite step that runs says its shell")
				script = run
			}
			env, _ := step["env"].(map[string]any)
			for _, v := range env {
				for _, m := range regexp.MustCompile(`inputs\.([a-z-]+)`).FindAllStringSubmatch(v.(string), -1) {
					require.Contains(t, inputs, m[1], "the step reads an input the action declares")
				}
			}
		}
		o := parseRun(t, lastRunLine(t, script))
		require.Equal(t, "github", o.SCM)
		require.Equal(t, "acme/gitops", o.GitHub.Repo)
		require.Equal(t, "GITHUB_TOKEN", o.GitHub.TokenEnv, "the step hands the token over as GITHUB_TOKEN")
		require.Equal(t, "main", o.Base)
		require.Equal(t, "markdown", o.Observe.Output, "for $GITHUB_STEP_SUMMARY")
		require.True(t, o.DryRun, "the args input is passed on")
	})

	t.Run("GitHub workflow example", func(t *testing.T) {
		wf := readYAML(t, "../../examples/ci/rightsize.github-actions.yaml")
		on := wf["on"].(map[string]any)
		require.NotEmpty(t, on["schedule"].([]any)[0].(map[string]any)["cron"])
		require.Equal(t, map[string]any{"contents": "write", "pull-requests": "write"}, wf["permissions"])
		steps := wf["jobs"].(map[string]any)["run"].(map[string]any)["steps"].([]any)
		i := slices.IndexFunc(steps, func(s any) bool {
			uses, _ := s.(map[string]any)["uses"].(string)
			return strings.HasPrefix(uses, "gpu-rightsizing/recommender@")
		})
		require.GreaterOrEqual(t, i, 0, "the workflow uses the action")
		for k := range steps[i].(map[string]any)["with"].(map[string]any) {
			require.Contains(t, action["inputs"], k, "the example gives only inputs the action has")
		}
	})

	t.Run("GitLab CI template", func(t *testing.T) {
		tpl := readYAML(t, "../../examples/ci/rightsize.gitlab-ci.yaml")
		job := tpl["gpu-rightsizing"].(map[string]any)
		require.Equal(t, `$CI_PIPELINE_SOURCE == "schedule"`, job["rules"].([]any)[0].(map[string]any)["if"])
		require.NotEmpty(t, job["resource_group"], "one run at a time")
		script := job["script"].([]any)
		o := parseRun(t, lastRunLine(t, script[len(script)-1].(string)))
		require.Equal(t, "gitlab", o.SCM)
		require.Equal(t, "https://gitlab.example.com", o.GitLab.URL)
		require.Equal(t, "platform/gitops", o.GitLab.Project)
		require.Equal(t, "GITLAB_TOKEN", o.GitLab.TokenEnv)
		require.Equal(t, "json", o.Observe.Output)
	})
}
