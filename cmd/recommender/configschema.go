package main

import (
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/source"
	"github.com/gpu-rightsizing/recommender/internal/run"
)

// The values of the settings that take one of a few: the checks of run
// and plan and the chart's schema (configRules) read these lists.
func outputFormats() []string { return []string{"table", "json", "markdown"} }
func logLevels() []string     { return []string{"debug", "info", "warn", "error"} }
func logFormats() []string    { return []string{"auto", "text", "json"} }

// Patterns of the settings with a shape, in the syntax both Go's regexp and
// JSON Schema read. The checks that parse these values come first; these
// say the same for a values file, before anything runs.
const (
	// httpURLPattern: http:// or https://, a host (an IPv6 one
	// bracketed), a port of digits, no password, query or fragment
	// (prometheus.CheckURL).
	httpURLPattern = `^https?://([^/?#@:]+@)?(\[[0-9a-fA-F:.]+\]|[^/?#@:\[\]]+)(:[0-9]{1,5})?(/[^?#]*)?$`
	// ownerNamePattern: a GitHub repository, owner/name.
	ownerNamePattern = `^[^/]+/[^/]+$`
	// labelPattern: name=value.
	labelPattern = `^[^=]+=.+$`
	// headerPattern: 'Name: value', the name without blanks.
	headerPattern = `^\s*[^:\s]+\s*:`
	// atPattern: RFC 3339, or Unix seconds.
	atPattern = `^([0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2})|[0-9]+(\.[0-9]*)?)$`
	// namePattern: a name or a pattern, never empty, free of what
	// path.Match would refuse.
	namePattern = `^[^/\[\\]+$`
	// workloadPattern: namespace/Kind/name, namespace/name or name.
	workloadPattern = `^[^/\[\\]+(/[^/\[\\]+){0,2}$`
	// selectorPattern: a label selector as Kubernetes parses one:
	// requirements separated by commas, each key, !key, key=value,
	// key==value, key!=value, key in (values), key notin (values), or
	// key > and < a number.
	selectorPattern = `^\s*(` + selectorReq + `(,` + selectorReq + `)*)?$`
	selectorKey     = `[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?`
	selectorValue   = `([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?`
	selectorReq     = `\s*(!\s*` + selectorKey + `|` + selectorKey + `(\s*(=|==|!=)\s*` + selectorValue + `|\s*[<>]\s*[0-9]+|\s+(in|notin)\s*\(\s*` +
		selectorValue + `(\s*,\s*` + selectorValue + `)*\s*\))?)\s*`
	// clusterPattern: a cluster's name as a ClusterMap names it, a DNS
	// label.
	clusterPattern = `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`
	// liveContextPattern: CLUSTER=CONTEXT, a cluster's name and a
	// context of the kubeconfig.
	liveContextPattern = `^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?=\S`
	// positivePattern: a duration with a digit other than 0 is more
	// than none.
	positivePattern = `[1-9]`
)

// configRules are what the config keys' values must be, by flag: the
// chart's schema is made of them (TestChartSchema), and a test holds
// them to what `config validate` refuses (TestChartSchemaAgrees).
func configRules() map[string]config.Rule {
	return map[string]config.Rule{
		"scm":                    {Enum: run.SCMs()},
		"output":                 {Enum: append([]string{""}, outputFormats()...)},
		"log-level":              {Enum: logLevels()},
		"log-format":             {Enum: logFormats()},
		"group-by":               {Enum: run.Groupings()},
		"metrics-preset":         {Enum: source.PresetNames()},
		"prometheus-url":         {Patterns: []string{`^$|` + httpURLPattern}},
		"github-url":             {Patterns: []string{`^$|` + httpURLPattern}},
		"gitlab-url":             {Patterns: []string{`^$|` + httpURLPattern}},
		"github-repo":            {Patterns: []string{`^$|` + ownerNamePattern}},
		"cluster-label":          {Patterns: []string{`^$|` + labelPattern}},
		"prometheus-header":      {Patterns: []string{headerPattern}},
		"prometheus-timeout":     {Patterns: []string{positivePattern}},
		"at":                     {Patterns: []string{`^$|` + atPattern}},
		"namespace":              {Patterns: []string{namePattern}},
		"selector":               {Patterns: []string{selectorPattern}},
		"workload":               {Patterns: []string{workloadPattern}},
		"cluster":                {Patterns: []string{clusterPattern}},
		"live-namespaces":        {Patterns: []string{`\S`}},
		"live-max-changes":       {Minimum: config.Min(0)},
		"live-context":           {Patterns: []string{liveContextPattern}},
		"max-open":               {Minimum: config.Min(0)},
		"max-new":                {Minimum: config.Min(0)},
		"decline-percent":        {Minimum: config.Min(1)},
		"github-app-id":          {Minimum: config.Min(0)},
		"github-installation-id": {Minimum: config.Min(0)},
		"pushgateway-url":        {Patterns: []string{`^$|` + httpURLPattern}},
		"event-cronjob":          {Patterns: []string{`^$|` + ownerNamePattern}},
		"fleet-findings":         {Enum: []string{"off", "cluster", "metrics"}},
	}
}

// configNeeds are the settings that need or exclude others, as run's
// checks say them. Those a chart meets from its Secrets (a token, a
// GitHub App's key, an SSH key come as RECOMMENDER_*_FILE variables) are
// not among them: a values file cannot show them.
func configNeeds() []config.Need {
	set := func(path string) config.Cond { return config.Cond{Path: path} }
	unset := func(path string) config.Cond { return config.Cond{Path: path, Unset: true} }
	github := config.Cond{Path: "scm", Value: "github"}
	var promOnly []string
	for _, k := range config.Keys() {
		if slices.Contains(source.PrometheusFlags(), k.Flag) {
			promOnly = append(promOnly, k.Path)
		}
	}
	return []config.Need{
		{When: []config.Cond{{Path: "scm", Value: "local"}}, Needs: []string{"repo"}},
		{When: []config.Cond{{Path: "scm", Value: "github"}}, Needs: []string{"github.repo"}},
		{When: []config.Cond{{Path: "scm", Value: "gitlab"}}, Needs: []string{"gitlab.project"}},
		{When: []config.Cond{unset("metrics.file")}, Needs: []string{"prometheus.url"}},
		{When: []config.Cond{set("metrics.file")}, Excludes: []string{"prometheus.url"}},
		{When: []config.Cond{unset("prometheus.url")}, Excludes: promOnly},
		{When: []config.Cond{set("git.sshKeyFile")}, Needs: []string{"git.url", "git.knownHostsFile"}},
		{When: []config.Cond{set("git.knownHostsFile")}, Needs: []string{"git.sshKeyFile"}},
		{When: []config.Cond{github, set("github.appID")}, Needs: []string{"github.installationID"}, Excludes: []string{"github.tokenFile"}},
		{When: []config.Cond{github, set("github.installationID")}, Needs: []string{"github.appID"}},
		{When: []config.Cond{{Path: "live.enabled", Value: "true"}}, Needs: []string{"live.namespaces"}},
	}
}

// configSchema is the JSON Schema of a config file: every key of the
// commands that read one (the root's flags, run's, then plan's that run
// lacks), with configRules and configNeeds. The chart's values.schema.json
// holds it as its config section.
func configSchema() (map[string]any, error) {
	io := streams{Out: &strings.Builder{}, Err: &strings.Builder{}}
	root := newCmdRoot(io, nil)
	fs := pflag.NewFlagSet("config", pflag.ContinueOnError)
	fs.AddFlagSet(root.PersistentFlags())
	for _, name := range []string{"run", "plan"} {
		c, _, err := root.Find([]string{name})
		if err != nil {
			return nil, err
		}
		fs.AddFlagSet(c.Flags())
	}
	return config.Schema(fs, configRules(), configNeeds())
}
