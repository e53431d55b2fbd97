package config_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/config"
)

// schemaFlags are flags of the types a config key can have, under real
// key names.
func schemaFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	fs.String("scm", "local", "where pull requests live")
	fs.String("github-repo", "", "GitHub repository as `owner/name`")
	fs.Bool("live", false, "live mode")
	fs.StringArray("live-namespaces", nil, "namespaces")
	fs.Int("max-new", 0, "cap")
	fs.Duration("prometheus-timeout", 30*time.Second, "time limit")
	return fs
}

// TestSchema: each key typed as its flag parses it, under its path, with
// its rule; nothing beyond the keys; needs as if/then.
func TestSchema(t *testing.T) {
	s, err := config.Schema(schemaFlags(), map[string]config.Rule{
		"scm":         {Enum: []string{"local", "github"}},
		"github-repo": {Patterns: []string{`^$|^[^/]+/[^/]+$`, `^.{0,100}$`}},
		"max-new":     {Minimum: config.Min(0)},
	}, []config.Need{
		{When: []config.Cond{{Path: "scm", Value: "github"}}, Needs: []string{"github.repo"}},
		{When: []config.Cond{{Path: "live.enabled", Unset: true}}, Excludes: []string{"live.namespaces"}},
	})
	require.NoError(t, err)
	got, err := json.MarshalIndent(s, "", "  ")
	require.NoError(t, err)
	require.JSONEq(t, `{
	  "type": "object", "additionalProperties": false,
	  "properties": {
	    "scm": {"type": "string", "enum": ["local", "github"], "default": "local", "description": "where pull requests live"},
	    "github": {"type": "object", "additionalProperties": false, "properties": {
	      "repo": {"type": "string", "description": "GitHub repository as owner/name", "pattern": "^$|^[^/]+/[^/]+$", "allOf": [{"pattern": "^.{0,100}$"}]}
	    }},
	    "live": {"type": "object", "additionalProperties": false, "properties": {
	      "enabled": {"type": "boolean", "default": false, "description": "live mode"},
	      "namespaces": {"type": "array", "items": {"type": "string"}, "description": "namespaces"}
	    }},
	    "pullRequests": {"type": "object", "additionalProperties": false, "properties": {
	      "maxNew": {"type": "integer", "minimum": 0, "default": 0, "description": "cap"}
	    }},
	    "prometheus": {"type": "object", "additionalProperties": false, "properties": {
	      "timeout": {"type": "string", "default": "30s", "description": "time limit",
	        "pattern": "^(0|(([0-9]+(\\.[0-9]*)?|\\.[0-9]+)(ns|us|µs|ms|s|m|h))+)$"}
	    }}
	  },
	  "allOf": [
	    {"if": {"properties": {"scm": {"const": "github"}}, "required": ["scm"]},
	     "then": {"allOf": [{"properties": {"github": {"properties": {"repo": {"minLength": 1}}, "required": ["repo"]}}, "required": ["github"]}]}},
	    {"if": {"not": {"properties": {"live": {"properties": {"enabled": {"not": {"const": false}}}, "required": ["enabled"]}}, "required": ["live"]}},
	     "then": {"allOf": [{"properties": {"live": {"properties": {"namespaces": {"maxItems": 0}}}}}]}}
	  ]
	}`, string(got))
}

// TestSchemaDrift: a rule or a need that names no key is an error, so
// that the tables cannot drift from the keys unseen.
func TestSchemaDrift(t *testing.T) {
	tests := []struct {
		name  string
		rules map[string]config.Rule
		needs []config.Need
		err   string
	}{
		{name: "a rule of no flag", rules: map[string]config.Rule{"scn": {Enum: []string{"x"}}}, err: "a rule names --scn"},
		{name: "a need of no key", needs: []config.Need{{When: []config.Cond{{Path: "scm", Value: "github"}}, Needs: []string{"github.rep"}}},
			err: "a need names github.rep"},
		{name: "a condition on no key", needs: []config.Need{{When: []config.Cond{{Path: "sc"}}}}, err: "a need names sc"},
		{name: "a minimum of a string", rules: map[string]config.Rule{"scm": {Minimum: config.Min(1)}}, err: "a minimum for a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.Schema(schemaFlags(), tt.rules, tt.needs)
			require.ErrorContains(t, err, tt.err)
		})
	}
}
