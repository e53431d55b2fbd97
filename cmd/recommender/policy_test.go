package main

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"
)

func TestNewCmdPolicyValidate(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want policyValidateOptions
		err  string
	}{
		{name: "defaults", want: policyValidateOptions{Repo: ".", DefaultNamespace: "default", Output: "table"}},
		{
			name: "everything",
			args: []string{"--repo", "r", "--policies", "policies", "--policies", "more", "--default-namespace", "ml", "-o", "json"},
			want: policyValidateOptions{Repo: "r", PolicyPaths: []string{"policies", "more"}, DefaultNamespace: "ml", Output: "json"},
		},
		{name: "bad output", args: []string{"-o", "markdown"}, err: "invalid `--output` \"markdown\": use table or json"},
		{name: "unknown flag", args: []string{"--metrics-file", "m"}, err: "unknown flag: --metrics-file"},
		{name: "stray argument", args: []string{"extra"}, err: `unknown command "extra" for "policy validate"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got *policyValidateOptions
			io := streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}
			logger := func() (*slog.Logger, error) { return slog.New(slog.DiscardHandler), nil }
			cmd := newCmdPolicy(io, logger, func(_ context.Context, o *policyValidateOptions) error {
				got = o
				return nil
			})
			// As the root does: the test reads the error, not the usage.
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			cmd.SetArgs(append([]string{"validate"}, tt.args...))
			err := cmd.Execute()
			if tt.err != "" {
				require.EqualError(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			got.IO, got.Logger = streams{}, nil
			require.Equal(t, tt.want, *got)
		})
	}
}

// brokenQuickstart is a copy of the quickstart's policies and manifests
// with edit applied to it, for the mistakes a pull request makes.
func brokenQuickstart(t *testing.T, edit func(t *testing.T, repo string)) string {
	t.Helper()
	repo := t.TempDir()
	require.NoError(t, os.CopyFS(repo, os.DirFS(quickstartRepo)))
	require.NoError(t, os.Remove(filepath.Join(repo, "metrics.om")))
	if edit != nil {
		edit(t, repo)
	}
	return repo
}

// replaceIn replaces old, which must be there, with new in the quickstart
// copy's policy file.
func replaceIn(old, new string) func(t *testing.T, repo string) {
	return func(t *testing.T, repo string) {
		t.Helper()
		path := filepath.Join(repo, "policies", "kai-gpu-sharing.yaml")
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		require.Contains(t, string(b), old)
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), old, new, 1)), 0o644))
	}
}

func TestPolicyValidate(t *testing.T) {
	const (
		governed = "ClusterProactivePolicy kai-gpu-sharing-baseline, ClusterGpuReactivePolicy kai-gpu-sharing-reactive"
		both     = "ClusterProactivePolicy kai-gpu-sharing-baseline and ClusterProactivePolicy everything both select it"
	)
	tests := []struct {
		name string
		edit func(t *testing.T, repo string)
		code exitCode
		// problems are the lines under the problems' header, exactly.
		problems []string
		// rows are lines the summary must hold, spaces squeezed.
		rows []string
	}{
		{
			name: "quickstart",
			code: exitOK,
			rows: []string{
				"ClusterProactivePolicy kai-gpu-sharing-baseline policies/kai-gpu-sharing.yaml:37 inference/Deployment/asr-whisper, inference/Deployment/chat, " +
					"inference/Deployment/embed, inference/Deployment/rerank, inference/Deployment/summarize, inference/Deployment/translate",
				"inference/Deployment/chat apps/chat/deployment.yaml:1 " + governed,
				"inference/Deployment/ocr apps/ocr/deployment.yaml:3 none (out-of-scope): no policy selects it",
			},
		},
		{
			name: "unknown field",
			edit: replaceIn("    workloadTypes:\n      - Deployment\n  automationStrategyRef:",
				"    workloadTypes:\n      - Deployment\n    workloadType: Deployment\n  automationStrategyRef:"),
			code:     exitProblems,
			problems: []string{"policies/kai-gpu-sharing.yaml:53:5: spec.scope.workloadType: unknown field (did you mean \"workloadTypes\"?)"},
			rows: []string{
				"ClusterProactivePolicy kai-gpu-sharing-baseline policies/kai-gpu-sharing.yaml:37 invalid: nothing it could govern is changed (see the problems)",
				"inference/Deployment/chat apps/chat/deployment.yaml:1 none (policy-invalid): ClusterProactivePolicy kai-gpu-sharing-baseline " +
					"is invalid (policies/kai-gpu-sharing.yaml:37) and could govern it",
			},
		},
		{
			name: "bad selector",
			edit: replaceIn("      matchLabels:\n        # Opt-in label: only Deployments that say they use a GPU.\n        nvidia.com/gpu.present: \"true\"",
				"      matchExpressions:\n        - key: nvidia.com/gpu.present\n          operator: Equals\n          values: [\"true\"]"),
			code: exitProblems,
			problems: []string{"policies/kai-gpu-sharing.yaml:50:21: spec.scope.labelSelector.matchExpressions[0].operator: " +
				"\"Equals\" is not supported: use In, NotIn, Exists or DoesNotExist"},
			rows: []string{
				"ClusterGpuReactivePolicy kai-gpu-sharing-reactive policies/kai-gpu-sharing.yaml:57 inference/Deployment/asr-whisper, inference/Deployment/chat, " +
					"inference/Deployment/embed, inference/Deployment/rerank, inference/Deployment/summarize, inference/Deployment/translate",
				"inference/Deployment/ocr apps/ocr/deployment.yaml:3 none (policy-invalid): ClusterProactivePolicy kai-gpu-sharing-baseline " +
					"is invalid (policies/kai-gpu-sharing.yaml:37) and could govern it",
			},
		},
		{
			// Issue 34: the bad duration hid the threshold beside it.
			name: "a bad threshold and a bad duration side by side",
			edit: replaceIn("        thresholdPercent: 100\n        metricsWindow: 2m\n        headroomPercent: 20\n        maxPercent: 200",
				"        thresholdPercent: 5000\n        metricsWindow: 2 minutes\n        headroomPercent: 20\n        maxPercent: 200"),
			code: exitProblems,
			problems: []string{
				"policies/kai-gpu-sharing.yaml:80:27: spec.metrics.compute.upsize.thresholdPercent: 5000 is out of range: must be between 1 and 1000",
				"policies/kai-gpu-sharing.yaml:81:24: spec.metrics.compute.upsize.metricsWindow: invalid duration \"2 minutes\": " +
					"use a number and a unit, e.g. 30s, 10m, 2h or 7d",
			},
			rows: []string{
				"ClusterGpuReactivePolicy kai-gpu-sharing-reactive policies/kai-gpu-sharing.yaml:56 invalid: nothing it could govern is changed (see the problems)",
			},
		},
		{
			name: "duplicate names",
			edit: func(t *testing.T, repo string) {
				require.NoError(t, os.WriteFile(filepath.Join(repo, "policies", "more.yaml"), []byte(
					"apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterProactivePolicy\nmetadata:\n  name: kai-gpu-sharing-baseline\n"+
						"spec:\n  scope:\n    workloadTypes: [Deployment]\n  automationStrategyRef:\n    name: kai-gpu-sharing\n"), 0o644))
			},
			code: exitProblems,
			problems: []string{
				"policies/kai-gpu-sharing.yaml:37: metadata.name: ClusterProactivePolicy kai-gpu-sharing-baseline is defined more than once; none of them is used",
				"policies/more.yaml:1: metadata.name: ClusterProactivePolicy kai-gpu-sharing-baseline is defined more than once; none of them is used",
			},
			rows: []string{
				"ClusterProactivePolicy kai-gpu-sharing-baseline policies/more.yaml:1 invalid: nothing it could govern is changed (see the problems)",
				"inference/Deployment/gateway apps/gateway/deployment.yaml:1 none (policy-invalid): ClusterProactivePolicy kai-gpu-sharing-baseline " +
					"is invalid (policies/more.yaml:1) and could govern it",
			},
		},
		{
			name: "two policies claim one workload",
			edit: func(t *testing.T, repo string) {
				require.NoError(t, os.WriteFile(filepath.Join(repo, "policies", "more.yaml"), []byte(
					"apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterProactivePolicy\nmetadata:\n  name: everything\n"+
						"spec:\n  scope:\n    workloadTypes: [Deployment]\n  automationStrategyRef:\n    name: kai-gpu-sharing\n"), 0o644))
			},
			code: exitProblems,
			problems: []string{
				"apps/asr/deployment.yaml:2: inference/Deployment/asr-whisper is left alone: " + both,
				"apps/chat/deployment.yaml:1: inference/Deployment/chat is left alone: " + both,
				"apps/embed/deployment.yaml:1: inference/Deployment/embed is left alone: " + both,
				"apps/rerank/deployment.yaml:1: inference/Deployment/rerank is left alone: " + both,
				"apps/summarize/deployment.yaml:1: inference/Deployment/summarize is left alone: " + both,
				"apps/translate/deployment.yaml:12: inference/Deployment/translate is left alone: " + both,
			},
			rows: []string{
				"ClusterProactivePolicy everything policies/more.yaml:1 inference/Deployment/asr-whisper, inference/Deployment/chat, inference/Deployment/embed, " +
					"inference/Deployment/gateway, inference/Deployment/ocr, inference/Deployment/rerank, inference/Deployment/summarize, inference/Deployment/translate",
				"inference/Deployment/chat apps/chat/deployment.yaml:1 none (policy-conflict): " + both,
				// Plan hides a workload without a GPU; validate shows the
				// policy that selects it.
				"inference/Deployment/gateway apps/gateway/deployment.yaml:1 ClusterProactivePolicy everything",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			repo := brokenQuickstart(t, tt.edit)
			out, errOut, code := cli(t, "policy", "validate", "--repo", repo)
			require.Equal(t, tt.code, code, "stdout:\n%s\nstderr:\n%s", out, errOut)
			require.Empty(t, errOut)
			require.Equal(t, tt.problems, problemLines(out), out)
			summary := squeeze(out)
			for _, row := range tt.rows {
				require.Contains(t, summary, "\n"+row+"\n")
			}
		})
	}
}

// TestPolicyValidateGolden is the whole output on the quickstart, for
// people and for machines.
func TestPolicyValidateGolden(t *testing.T) {
	for _, tt := range []struct{ name, output, golden string }{
		{name: "table", output: "table", golden: "quickstart-policy-validate.txt"},
		{name: "json", output: "json", golden: "quickstart-policy-validate.json"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := cli(t, "policy", "validate", "--repo", quickstartRepo, "--output", tt.output)
			require.Equal(t, exitOK, code, errOut)
			golden(t, tt.golden, []byte(out))
		})
	}
}

// problemLines are the lines the table lists under its problems' header.
func problemLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "  ") {
			if len(lines) > 0 {
				break
			}
			continue
		}
		lines = append(lines, strings.TrimPrefix(l, "  "))
	}
	return lines
}

// squeeze turns the table's padding into one space per column break, so
// that a row reads the same whatever the widths of the others.
func squeeze(out string) string {
	lines := strings.Split(out, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return "\n" + strings.Join(lines, "\n")
}

// TestPolicyValidateExamples holds the pre-commit hook and the CI examples
// to YAML that parses and to the command this file tests: examples that
// drift from the CLI fail here, not in a user's pipeline.
func TestPolicyValidateExamples(t *testing.T) {
	tests := []struct {
		name, path string
		// command finds the command line in the parsed file.
		command func(doc any) string
	}{
		{name: "pre-commit hook", path: "../../.pre-commit-hooks.yaml", command: func(doc any) string {
			hook := doc.([]any)[0].(map[string]any)
			require.Equal(t, "recommender-policy-validate", hook["id"])
			require.Equal(t, false, hook["pass_filenames"], "the hook reads the whole checkout")
			return hook["entry"].(string)
		}},
		{name: "GitHub Actions", path: "../../examples/ci/policy-validate.github-actions.yaml", command: func(doc any) string {
			steps := doc.(map[string]any)["jobs"].(map[string]any)["validate"].(map[string]any)["steps"].([]any)
			return steps[len(steps)-1].(map[string]any)["run"].(string)
		}},
		{name: "GitLab CI", path: "../../examples/ci/policy-validate.gitlab-ci.yaml", command: func(doc any) string {
			script := doc.(map[string]any)["policy-validate"].(map[string]any)["script"].([]any)
			return script[len(script)-1].(string)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := os.ReadFile(tt.path)
			require.NoError(t, err)
			var doc any
			require.NoError(t, yaml.Unmarshal(b, &doc))
			args := strings.Fields(tt.command(doc))
			require.Equal(t, "recommender", args[0])
			// Its flags parse: a renamed flag breaks the example here.
			var got *policyValidateOptions
			logger := func() (*slog.Logger, error) { return slog.New(slog.DiscardHandler), nil }
			cmd := newCmdPolicy(streams{Out: &bytes.Buffer{}, Err: &bytes.Buffer{}}, logger, func(_ context.Context, o *policyValidateOptions) error {
				got = o
				return nil
			})
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			require.Equal(t, "policy", args[1])
			cmd.SetArgs(args[2:])
			require.NoError(t, cmd.Execute())
			require.Equal(t, ".", got.Repo)
		})
	}
}
