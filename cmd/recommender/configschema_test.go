package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	sigsyaml "sigs.k8s.io/yaml"
)

const (
	chartDir    = "../../charts/recommender"
	chartSchema = chartDir + "/values.schema.json"
)

// spliceConfig replaces the value of properties.config in a schema file
// with section, indented as the file is, leaving every other byte alone:
// the rest of the chart's schema is written by hand.
func spliceConfig(file []byte, section map[string]any) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(file))
	depth, inProps := 0, false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no properties.config in the schema")
		}
		if err != nil {
			return nil, err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			continue
		case json.Delim('}'), json.Delim(']'):
			depth--
			continue
		}
		key, ok := tok.(string)
		if !ok {
			continue
		}
		switch {
		case depth == 1 && key == "properties":
			inProps = true
			continue
		case depth == 2 && inProps && key == "config":
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, err
			}
			end := int(dec.InputOffset())
			start := end - len(raw)
			gen, err := json.MarshalIndent(section, "    ", "  ")
			if err != nil {
				return nil, err
			}
			return slices.Concat(file[:start], gen, file[end:]), nil
		case depth == 1:
			// A value at the top: skip it whole, so that its strings
			// are not taken for keys.
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
		case depth == 2 && inProps:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, err
			}
		}
	}
}

// TestChartSchema: the config section of the chart's values.schema.json is
// the one the config keys, their flags and configRules make today, so
// that a key added to run reaches the chart (go test ./cmd/recommender
// -run TestChartSchema -update).
func TestChartSchema(t *testing.T) {
	section, err := configSchema()
	require.NoError(t, err)
	section["description"] = "run's config file (docs/configure.md): generated from the config keys by TestChartSchema in cmd/recommender"
	file, err := os.ReadFile(chartSchema)
	require.NoError(t, err)
	want, err := spliceConfig(file, section)
	require.NoError(t, err)
	if *update {
		require.NoError(t, os.WriteFile(chartSchema, want, 0o644))
		return
	}
	require.Equal(t, string(want), string(file), "run go test ./cmd/recommender -run TestChartSchema -update")
}

// validateValues checks values against the chart's schema as `helm
// install` does, defaults merged in; nil: accepted.
func validateValues(t *testing.T, vals map[string]any) error {
	t.Helper()
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	_, err = util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: "gpu", Namespace: "gpu-rightsizing", IsInstall: true}, nil)
	return err
}

// validateConfig runs `config validate` on a config file's text; nil:
// accepted.
func validateConfig(t *testing.T, text string) error {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := Main([]string{"config", "validate", "--config", writeConfig(t, text)}, &out, &errOut); code != exitOK {
		return fmt.Errorf("exit %d: %s", code, errOut.String())
	}
	return nil
}

// configSectionSchema is the committed schema's config section alone, as
// a schema file of its own.
func configSectionSchema(t *testing.T) []byte {
	t.Helper()
	file, err := os.ReadFile(chartSchema)
	require.NoError(t, err)
	var whole struct {
		Schema     string                     `json:"$schema"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	require.NoError(t, json.Unmarshal(file, &whole))
	var section map[string]any
	require.NoError(t, json.Unmarshal(whole.Properties["config"], &section))
	section["$schema"] = whole.Schema
	b, err := json.Marshal(section)
	require.NoError(t, err)
	return b
}

// probe is one value a key is set to, beside a base config that is valid.
type probe struct {
	path  string
	value any
}

// probes are values for every key of a schema's properties: each value
// an enum allows, one it does not, a string that fits no shape, an empty
// string, a negative and a zero number, a word for a boolean, a string
// for a list and a list with an empty item.
func probes(prefix string, s map[string]any) []probe {
	var out []probe
	props, _ := s["properties"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p := props[name].(map[string]any)
		path := strings.TrimPrefix(prefix+"."+name, ".")
		if p["type"] == "object" {
			out = append(out, probes(path, p)...)
			continue
		}
		add := func(vs ...any) {
			for _, v := range vs {
				out = append(out, probe{path, v})
			}
		}
		switch p["type"] {
		case "boolean":
			add(true, false, "yes")
		case "integer":
			add(-1, 0, 1, "1")
		case "array":
			add([]any{"a"}, []any{""}, []any{"not a value"}, "a", []any{1})
		default:
			if enum, ok := p["enum"].([]any); ok {
				add(enum...)
			}
			add("not a value", "", 1, "1m", "owner/name", "http://127.0.0.1:9090", "a=b", "2026-11-30T12:00:00Z")
		}
	}
	return out
}

// setPath sets a dotted key path in a config map.
func setPath(m map[string]any, path string, v any) {
	parts := strings.Split(path, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// chartSupplied are the keys whose checks depend on what the chart gives
// the job beside the config, which a schema of the config cannot see.
var chartSupplied = map[string]string{
	"git.url":         "an SSH URL needs a key, which the chart mounts from git.ssh's Secret and names in $RECOMMENDER_GIT_SSH_KEY_FILE",
	"webhook.urlFile": "the webhook's URL is a secret: the file comes from a Secret the chart mounts, and run reads it",
	"webhook.urlEnv":  "the webhook's URL is a secret: the variable comes from a Secret (extraEnv), and run reads it",
}

// TestChartSchemaAgrees: the chart's schema and `config validate` judge a
// config alike, key by key — for every key the schema holds, each probe
// value is accepted by both or refused by both. A check added to run
// without its rule in configRules, or a rule run does not check, fails
// here.
func TestChartSchemaAgrees(t *testing.T) {
	schema := configSectionSchema(t)
	var section map[string]any
	require.NoError(t, json.Unmarshal(schema, &section))
	bases := map[string]map[string]any{
		"prometheus": {"scm": "local", "repo": ".", "prometheus": map[string]any{"url": "http://127.0.0.1:9090"}},
		"recording":  {"scm": "local", "repo": ".", "metrics": map[string]any{"file": "usage.om"}},
	}
	for _, baseName := range slices.Sorted(maps.Keys(bases)) {
		for _, pr := range probes("", section) {
			if _, ok := chartSupplied[pr.path]; ok {
				continue
			}
			// Where usage comes from matters only to the usage keys.
			if baseName == "recording" && !strings.HasPrefix(pr.path, "prometheus.") && !strings.HasPrefix(pr.path, "metrics.") {
				continue
			}
			t.Run(fmt.Sprintf("%s/%s=%v", baseName, pr.path, pr.value), func(t *testing.T) {
				cfg := map[string]any{}
				b, err := json.Marshal(bases[baseName])
				require.NoError(t, err)
				require.NoError(t, json.Unmarshal(b, &cfg))
				setPath(cfg, pr.path, pr.value)
				text, err := sigsyaml.Marshal(cfg)
				require.NoError(t, err)
				// Helm reads values as sigs.k8s.io/yaml does.
				var vals map[string]any
				require.NoError(t, sigsyaml.Unmarshal(text, &vals))
				schemaErr := util.ValidateAgainstSingleSchema(vals, schema)
				validateErr := validateConfig(t, string(text))
				require.Equal(t, validateErr == nil, schemaErr == nil,
					"config:\n%s\nschema: %v\nconfig validate: %v", text, schemaErr, validateErr)
			})
		}
	}
}

// TestBadConfigsRefused: configs a new user writes by mistake, each
// refused by `helm install` (the chart's schema, at template time, the
// key named) and by `config validate` run on the config the chart would
// mount (values.config over the chart's defaults, as Helm merges them).
func TestBadConfigsRefused(t *testing.T) {
	tests := []struct {
		name   string
		values string
		key    string // what the schema's error names
		// chartOnly: why `config validate` cannot see the mistake.
		chartOnly string
	}{
		{name: "a misspelt key", values: "config: {github: {repo: a/b}, prometheus: {ulr: 'http://p:9090'}}", key: "'ulr'"},
		{name: "a misspelt section", values: "config: {github: {repo: a/b}, pullrequests: {maxNew: 2}}", key: "'pullrequests'"},
		{name: "an unknown forge", values: "config: {scm: bitbucket}", key: "/config/scm"},
		{name: "an unknown preset", values: "config: {github: {repo: a/b}, metrics: {preset: nvml}}", key: "/config/metrics/preset"},
		{name: "GitHub without a repository", values: "config: {scm: github}", key: "'github'"},
		{name: "GitHub with an empty repository", values: "config: {github: {repo: ''}}", key: "/config/github/repo"},
		{name: "a repository without its owner", values: "config: {github: {repo: gitops}}", key: "/config/github/repo"},
		{name: "GitLab without a project", values: "config: {scm: gitlab, gitlab: {url: 'https://gitlab.example.com'}}", key: "'project'"},
		{name: "a Prometheus URL that is no URL", values: "config: {github: {repo: a/b}, prometheus: {url: not a url}}", key: "/config/prometheus/url"},
		{name: "a Prometheus URL without http", values: "config: {github: {repo: a/b}, prometheus: {url: 'prometheus:9090'}}", key: "/config/prometheus/url"},
		{name: "a password in the Prometheus URL", values: "config: {github: {repo: a/b}, prometheus: {url: 'http://u:secret@p:9090'}}", key: "/config/prometheus/url"},
		{name: "a GitHub Enterprise URL without a scheme", values: "config: {github: {repo: a/b, url: ghe.example.com}}", key: "/config/github/url"},
		{name: "a recording and a server", values: "config: {github: {repo: a/b}, metrics: {file: /data/usage.om}}", key: "/config/prometheus/url"},
		{name: "an unknown grouping", values: "config: {github: {repo: a/b}, pullRequests: {groupBy: team}}", key: "/config/pullRequests/groupBy"},
		{name: "a negative cap", values: "config: {github: {repo: a/b}, pullRequests: {maxNew: -1}}", key: "/config/pullRequests/maxNew"},
		{name: "a quoted number", values: "config: {github: {repo: a/b}, pullRequests: {maxOpen: '5'}}", key: "/config/pullRequests/maxOpen"},
		{name: "a word for a boolean", values: "config: {github: {repo: a/b}, dryRun: 'yes'}", key: "/config/dryRun"},
		{name: "a timeout without a unit", values: "config: {github: {repo: a/b}, prometheus: {timeout: '30'}}", key: "/config/prometheus/timeout"},
		{name: "a zero timeout", values: "config: {github: {repo: a/b}, prometheus: {timeout: 0s}}", key: "/config/prometheus/timeout"},
		{name: "a cluster label without its value", values: "config: {github: {repo: a/b}, metrics: {clusterLabel: prod-eu}}", key: "/config/metrics/clusterLabel"},
		{name: "a header as a string", values: "config: {github: {repo: a/b}, prometheus: {headers: 'X-Scope-OrgID: gpu'}}", key: "/config/prometheus/headers"},
		{name: "a header without its colon", values: "config: {github: {repo: a/b}, prometheus: {headers: ['X-Scope-OrgID gpu']}}", key: "/config/prometheus/headers/0"},
		{name: "an unknown log level", values: "config: {github: {repo: a/b}, logLevel: verbose}", key: "/config/logLevel"},
		{name: "an unknown output", values: "config: {github: {repo: a/b}, output: yaml}", key: "/config/output"},
		{name: "a token inline", values: "config: {github: {repo: a/b, token: ghp_x}}", key: "'token'"},
		{name: "a bad selector", values: "config: {github: {repo: a/b}, filter: {selector: 'team in prod'}}", key: "/config/filter/selector"},
		{name: "an evaluation time in words", values: "config: {github: {repo: a/b}, metrics: {at: yesterday}}", key: "/config/metrics/at"},
		{name: "live mode without namespaces", values: "config: {github: {repo: a/b}, live: {enabled: true}}\nlive: {enabled: true}\nrbac: {namespaces: [inference]}",
			key: "'namespaces'"},
		{name: "a GitHub App without its installation", values: "config: {github: {repo: a/b, appID: 12}}", key: "'installationID'"},
		{name: "live mode the chart grants nothing for", values: "config: {github: {repo: a/b}, live: {enabled: true, namespaces: [inference]}}",
			key: "/live/enabled", chartOnly: "the chart's live.enabled grants the patch verbs: without it, run would be refused by the API server"},
	}
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vals map[string]any
			require.NoError(t, sigsyaml.Unmarshal([]byte(tt.values), &vals))
			err := validateValues(t, vals)
			require.Error(t, err, "helm install accepts it")
			require.Contains(t, err.Error(), tt.key)

			merged, err := util.CoalesceValues(ch, vals)
			require.NoError(t, err)
			text, err := sigsyaml.Marshal(merged["config"])
			require.NoError(t, err)
			err = validateConfig(t, string(text))
			if tt.chartOnly != "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err, "config validate accepts:\n%s", text)
		})
	}
}

// TestConfigPrintRoundTrip: what `config print` writes is a config that
// `config validate` accepts, and that the chart's schema accepts pasted
// under config: as values.yaml suggests (Helm reads YAML 1.1, where a
// plain off is false); printed again it says the same. Without --repo it
// still prints the defaults, and says on stderr what run would refuse.
func TestConfigPrintRoundTrip(t *testing.T) {
	print := func(t *testing.T, args ...string) (out, errOut string) {
		t.Helper()
		var o, e bytes.Buffer
		require.Equal(t, exitOK, Main(append([]string{"config", "print"}, args...), &o, &e), e.String())
		return o.String(), e.String()
	}
	// values keeps the values of a printed config, not their sources.
	values := func(t *testing.T, text string) map[string]any {
		t.Helper()
		var m map[string]any
		require.NoError(t, sigsyaml.Unmarshal([]byte(text), &m))
		return m
	}
	tests := []struct {
		name string
		args []string
	}{
		{name: "github and prometheus", args: []string{"--scm", "github", "--github-repo", "acme/gitops", "--prometheus-url", "http://prometheus:9090"}},
		{name: "a local repository and a recording", args: []string{"--scm", "local", "--repo", ".", "--metrics-file", "usage.om"}},
		{name: "fleet findings from the cluster, grouped by namespace",
			args: []string{"--scm", "local", "--repo", ".", "--metrics-file", "usage.om", "--fleet-findings", "cluster", "--group-by", "namespace", "-o", "json"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, errOut := print(t, tt.args...)
			require.Empty(t, errOut)
			require.NoError(t, validateConfig(t, text), "config validate refuses:\n%s", text)

			var vals map[string]any
			chart := "config:\n  " + strings.ReplaceAll(strings.TrimSuffix(text, "\n"), "\n", "\n  ") + "\n"
			require.NoError(t, sigsyaml.Unmarshal([]byte(chart), &vals))
			require.NoError(t, validateValues(t, vals), "helm install refuses:\n%s", chart)

			again, _ := print(t, "--config", writeConfig(t, text))
			require.Equal(t, values(t, text), values(t, again))
		})
	}

	t.Run("without a repository", func(t *testing.T) {
		text, errOut := print(t)
		require.Contains(t, text, "base: main # default\n")
		require.Contains(t, text, "fleetFindings: \"off\" # default\n")
		require.Contains(t, errOut, "run would refuse")
		require.Contains(t, errOut, "`--repo` is required")
	})
}
