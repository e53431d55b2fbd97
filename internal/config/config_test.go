package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/config"
)

// flags are a few settings of each type a flag holds, as run registers
// them.
func flags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.String("base", "main", "")
	fs.String("repo", "", "")
	fs.StringArray("label", nil, "")
	fs.StringArray("policies", nil, "")
	fs.Int("max-new", 0, "")
	fs.Int("max-open", 0, "")
	fs.Bool("dry-run", false, "")
	fs.Duration("prometheus-timeout", 30*time.Second, "")
	return fs
}

func noEnv(string) (string, bool) { return "", false }

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
}

// TestDecodeErrors: a mistake in the file is told with the file, line,
// column and key path, and what is known there.
func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, config, err string
	}{
		{name: "unknown key", config: "scm: local\nrepo: r\nmetrics:\n  file: m.om\n  source: hami\n",
			err: "c.yaml:5:3: metrics.source: unknown key (known keys: file, preset, at, clusterLabel, wholeStore)"},
		{name: "a letter too many", config: "scm: local\nrepo: r\nmetrics:\n  file: m.om\n  presets: hami\n",
			err: "c.yaml:5:3: metrics.presets: unknown key (did you mean \"preset\"?)"},
		{name: "two letters swapped", config: "outptu: json\n", err: "c.yaml:1:1: outptu: unknown key (did you mean \"output\"?)"},
		{name: "a letter left out, in a section", config: "prometheus:\n  tokenFil: /t\n",
			err: "c.yaml:2:3: prometheus.tokenFil: unknown key (did you mean \"tokenFile\"?)"},
		{name: "a key in the wrong section", config: "groupBy: policy\n", err: "c.yaml:1:1: groupBy: unknown key (did you mean \"pullRequests.groupBy\"?)"},
		{name: "a key of several sections", config: "url: http://p\n",
			err: "c.yaml:1:1: url: unknown key (known keys: " + strings.Join(topKeys(), ", ") + ")"},
		{name: "a short key takes one slip only", config: "prometheus:\n  usr1: u\n",
			err: "c.yaml:2:3: prometheus.usr1: unknown key (known keys: url, tokenFile, tokenEnv, user, passwordFile, headers, caFile, certFile, keyFile, insecureSkipVerify, timeout)"},
		{name: "a key in the wrong case", config: "prometheus:\n  URL: http://p\n", err: "c.yaml:2:3: prometheus.URL: unknown key (did you mean \"url\"?)"},
		{name: "a secret's value", config: "github:\n  token: ghp_x\n",
			err: "c.yaml:2:3: github.token: unknown key (a config holds no secret: name the file or the environment variable that holds it, e.g. tokenFile or tokenEnv)"},
		{name: "duplicate key", config: "base: a\nbase: b\n", err: "c.yaml:2:1: base: duplicate key"},
		{name: "a section that is not a mapping", config: "github: acme/gitops\n", err: "c.yaml:1:9: github: expected a mapping, got the string \"acme/gitops\""},
		{name: "a list where a mapping is", config: "- scm\n", err: "c.yaml:1:1: expected a mapping, got a list"},
		{name: "two documents", config: "base: a\n---\nbase: b\n", err: "c.yaml:2: one YAML document expected"},
		{name: "YAML syntax", config: "base: [a\n", err: "c.yaml: yaml: line 1: did not find expected ',' or ']'"},
		{name: "every mistake at once", config: "bse: a\nbase: b\nbase: c\n",
			err: "c.yaml:1:1: bse: unknown key (did you mean \"base\"?)\nc.yaml:3:1: base: duplicate key"},
		{name: "the keys known at the top", config: "nonsense: a\n",
			err: "c.yaml:1:1: nonsense: unknown key (known keys: " + strings.Join(topKeys(), ", ") + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Decode("c.yaml", []byte(tt.config))
			require.EqualError(t, err, tt.err)
			var cfgErr *config.Error
			require.ErrorAs(t, err, &cfgErr)
		})
	}
}

// topKeys are the top-level keys, in the order the file's errors list them.
func topKeys() []string {
	var names []string
	for _, k := range config.Keys() {
		name, _, _ := strings.Cut(k.Path, ".")
		if !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// TestApplyTypes: a value in the file is of the YAML type its flag holds,
// and goes through the flag's own parsing.
func TestApplyTypes(t *testing.T) {
	tests := []struct {
		name, config, err string
	}{
		{name: "a quoted integer", config: "pullRequests: {maxNew: \"3\"}\n", err: "c.yaml:1:24: pullRequests.maxNew: expected an integer, got the string \"3\""},
		{name: "yes is no boolean", config: "dryRun: yes\n", err: "c.yaml:1:9: dryRun: expected true or false, got the string \"yes\""},
		{name: "an unquoted number for a string", config: "base: 2024\n", err: "c.yaml:1:7: base: expected a string, got the integer 2024 (quote it)"},
		{name: "a bad duration", config: "prometheus: {timeout: 5 minutes}\n",
			err: "c.yaml:1:23: prometheus.timeout: expected a duration such as 30s or 2m, got \"5 minutes\""},
		{name: "a string for a list", config: "pullRequests:\n  labels: gpu\n", err: "c.yaml:2:11: pullRequests.labels: expected a list of strings, got the string \"gpu\""},
		{name: "a number in a list", config: "policies: [a, 1]\n", err: "c.yaml:1:11: policies: item 1: expected a string, got the integer 1"},
		{name: "a key of a flag the command lacks is left alone", config: "pullRequests: {draft: maybe}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := config.Decode("c.yaml", []byte(tt.config))
			require.NoError(t, err)
			_, err = config.Apply(flags(), f, noEnv)
			if tt.err == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.err)
		})
	}
}

// TestLoad: flag > environment > file > default, each setting's source
// said, and the file named by $RECOMMENDER_CONFIG when --config is not
// given.
func TestLoad(t *testing.T) {
	file := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(file, []byte("repo: from-file\nbase: file-base\npullRequests: {maxNew: 1, maxOpen: 2}\n"), 0o600))
	fs := flags()
	var name string
	config.AddFlag(fs, &name)
	require.NoError(t, fs.Parse([]string{"--max-new", "7"}))
	eff, err := config.Load(fs, &name, env(map[string]string{
		"RECOMMENDER_CONFIG": file, "RECOMMENDER_BASE": "env-base", "RECOMMENDER_MAX_NEW": "5",
	}))
	require.NoError(t, err)
	require.Equal(t, file, name)
	get := func(f string) string { return fs.Lookup(f).Value.String() }
	require.Equal(t, []string{"from-file", "env-base", "7", "2", "false"}, []string{get("repo"), get("base"), get("max-new"), get("max-open"), get("dry-run")})
	require.Equal(t, map[string]config.Source{
		"repo": {Kind: "file", Where: file + ":1:7"}, "base": {Kind: "env", Where: "RECOMMENDER_BASE"},
		"max-new": {Kind: "flag"}, "max-open": {Kind: "file", Where: file + ":3:36"},
		"label": {Kind: "default"}, "policies": {Kind: "default"}, "dry-run": {Kind: "default"}, "prometheus-timeout": {Kind: "default"},
	}, eff.Sources)
	notes, fromConfig := eff.Notes("`--repo` and `--base` and `--dry-run` clash")
	require.True(t, fromConfig)
	require.Equal(t, []string{"`--repo` is repo at " + file + ":1:7", "`--base` is $RECOMMENDER_BASE", "`--dry-run` is dryRun in " + file + ", or $RECOMMENDER_DRY_RUN"}, notes)
}

// TestLoadEveryMistake: Load tells every mistake of the file at once, in
// the order of the file, whether the key or its value is wrong: an
// unknown key does not hide a bad value, nor the other way round. The
// environment's come first; they have no line.
func TestLoadEveryMistake(t *testing.T) {
	tests := []struct {
		name, config string
		env          map[string]string
		err          string
	}{
		{name: "an unknown key and bad values",
			config: "prometheus:\n  timeout: 5x\n  tokenFil: /t\npullRequests:\n  maxOpen: lots\noutptu: json\n",
			err: "c.yaml:2:12: prometheus.timeout: expected a duration such as 30s or 2m, got \"5x\"\n" +
				"c.yaml:3:3: prometheus.tokenFil: unknown key (did you mean \"tokenFile\"?)\n" +
				"c.yaml:5:12: pullRequests.maxOpen: expected an integer, got the string \"lots\"\n" +
				"c.yaml:6:1: outptu: unknown key (did you mean \"output\"?)"},
		{name: "bad values in the file's order, not the keys'", config: "dryRun: maybe\nbase: 7\n",
			err: "c.yaml:1:9: dryRun: expected true or false, got the string \"maybe\"\n" +
				"c.yaml:2:7: base: expected a string, got the integer 7 (quote it)"},
		{name: "the environment's first", config: "bse: main\n", env: map[string]string{"RECOMMENDER_MAX_NEW": "x"},
			err: "$RECOMMENDER_MAX_NEW: expected an integer, got \"x\"\n" +
				"c.yaml:1:1: bse: unknown key (did you mean \"base\"?)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "c.yaml")
			require.NoError(t, os.WriteFile(file, []byte(tt.config), 0o600))
			fs := flags()
			var name string
			config.AddFlag(fs, &name)
			require.NoError(t, fs.Parse([]string{"--config", file}))
			_, err := config.Load(fs, &name, env(tt.env))
			var cfgErr *config.Error
			require.ErrorAs(t, err, &cfgErr, "a usage mistake")
			require.EqualError(t, err, strings.ReplaceAll(tt.err, "c.yaml", file))
		})
	}
}

// TestSplitEnvList: a list variable is split on commas, `\,` writing a
// comma inside an item.
func TestSplitEnvList(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{name: "commas", in: "a,b,c", want: []string{"a", "b", "c"}},
		{name: "space and empty items", in: " a , b ,, ", want: []string{"a", "b"}},
		{name: "empty", in: "", want: nil},
		{name: "only commas", in: ",,", want: nil},
		{name: "an escaped comma", in: `Accept: text/plain\, application/json,X-Scope-OrgID: gpu`,
			want: []string{"Accept: text/plain, application/json", "X-Scope-OrgID: gpu"}},
		{name: "an escaped backslash before a comma", in: `a\\,b`, want: []string{`a\`, "b"}},
		{name: "another backslash is itself", in: `C:\dir,x\y`, want: []string{`C:\dir`, `x\y`}},
		{name: "a trailing backslash", in: `a\`, want: []string{`a\`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := envList(tt.in)
			require.NoError(t, err)
			if len(tt.want) == 0 {
				require.Empty(t, got)
				return
			}
			require.Equal(t, tt.want, got)
		})
	}
}

// envList is the list $RECOMMENDER_LABEL=v sets.
func envList(v string) ([]string, error) {
	fs := flags()
	if _, err := config.Apply(fs, nil, env(map[string]string{"RECOMMENDER_LABEL": v})); err != nil {
		return nil, err
	}
	// GetSlice, not GetStringArray, which reads the value back through
	// CSV and loses a \r before a \n.
	return fs.Lookup("label").Value.(pflag.SliceValue).GetSlice(), nil
}

// escapeEnvItem writes an item for a list variable: what the split reads
// back as the item.
func escapeEnvItem(s string) string {
	return strings.NewReplacer(`\`, `\\`, ",", `\,`).Replace(s)
}

// FuzzSplitEnvList: any value splits without a panic into trimmed,
// non-empty items, and items written back with escapeEnvItem read back
// the same.
func FuzzSplitEnvList(f *testing.F) {
	for _, s := range []string{"", "a,b", ` a , b ,`, `Accept: a\, b,X: y`, `a\\,b`, `C:\dir`, `\`, `\,`, `,,\\\,`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		items, err := envList(v)
		if err != nil {
			t.Fatalf("%q: %v", v, err)
		}
		escaped := make([]string, len(items))
		for i, item := range items {
			if item == "" || item != strings.TrimSpace(item) {
				t.Fatalf("%q: item %d is %q", v, i, item)
			}
			escaped[i] = escapeEnvItem(item)
		}
		again, err := envList(strings.Join(escaped, ","))
		if err != nil || !slices.Equal(again, items) {
			t.Fatalf("%q: %q written back reads %q (%v)", v, items, again, err)
		}
	})
}

// FuzzDecodeConfig: a config file is the user's text. Decoding never
// fails hard, and every error it gives names the file.
func FuzzDecodeConfig(f *testing.F) {
	f.Add([]byte("scm: github\ngithub: {repo: acme/gitops, tokenFile: /t}\npolicies: [a, b]\n" +
		"prometheus: {url: https://mimir.example/prometheus, headers: ['X-Scope-OrgID: gpu'], timeout: 30s}\n" +
		"pullRequests: {maxNew: 3, draft: true}\nmetrics: {at: 2026-11-30T12:00:00Z}\n"))
	f.Add([]byte("scm: local\nrepo: r\nmetrics: {file: m.om}\n"))
	f.Add([]byte("prometheus:\n  url: &a http://p\n  headers: [*a, *a]\n"))
	f.Add([]byte("- a\n- b\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := config.Decode("recommender.yaml", b)
		if err != nil && !strings.Contains(err.Error(), "recommender.yaml") {
			t.Fatalf("an error that does not name the file: %v", err)
		}
	})
}
