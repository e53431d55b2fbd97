package source

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

// AddFlags registers the usage flags on fs, and returns what parses and
// checks them into o, for a command to call first; each mistake is a
// *config.FlagError naming its flag.
func AddFlags(fs *pflag.FlagSet, o *Options) func() error {
	var at, cluster, presetName string
	var headers []string
	fs.StringVar(&o.MetricsFile, "metrics-file", "", "recorded usage: OpenMetrics text with timestamps (.om, or .om.gz)")
	fs.StringVar(&at, "at", "", "evaluation time, RFC 3339 or Unix seconds (default: the newest recorded sample, or now with --prometheus-url)")
	fs.StringVar(&presetName, "metrics-preset", string(preset.Kubex), "`exporter` whose series policies read when they name none: "+
		"kubex (gpu-process-exporter), hami (HAMi vGPU monitor, kai-resource-isolator), dcgm (dcgm-exporter; whole GPUs only)")
	pc := &o.Prometheus
	fs.StringVar(&pc.URL, "prometheus-url", "", "read usage from the server at `URL`, with Prometheus' HTTP API; include any path prefix (Mimir's /prometheus)")
	fs.StringVar(&pc.BearerTokenFile, "prometheus-token-file", "", "read the bearer token from this `file`")
	fs.StringVar(&pc.BearerTokenEnv, "prometheus-token-env", "", "read the bearer token from this environment `variable`")
	fs.StringVar(&pc.BasicAuthUser, "prometheus-user", "", "basic auth `user`")
	fs.StringVar(&pc.BasicAuthPasswordFile, "prometheus-password-file", "", "read the basic auth password from this `file`")
	fs.StringArrayVar(&headers, "prometheus-header", nil, "send the header `'Name: value'` with every request, e.g. 'X-Scope-OrgID: tenant' for Mimir (repeatable)")
	fs.StringVar(&pc.CAFile, "prometheus-ca-file", "", "verify the server with the CA certificates in this PEM `file`")
	fs.StringVar(&pc.CertFile, "prometheus-cert-file", "", "client certificate PEM `file`, for mutual TLS")
	fs.StringVar(&pc.KeyFile, "prometheus-key-file", "", "client key PEM `file`, for mutual TLS")
	fs.BoolVar(&pc.InsecureSkipVerify, "prometheus-insecure-skip-verify", false, "do not verify the server's certificate (logged as a warning)")
	fs.DurationVar(&pc.Timeout, "prometheus-timeout", prometheus.DefaultTimeout, "time limit of each request; failing requests are tried up to 3 times")
	fs.StringVar(&cluster, "cluster-label", "", "read only the series with this label, `name=value`, e.g. cluster=prod-eu when several clusters share a store (a recording or a server); a repository with a ClusterMap names its own")
	fs.BoolVar(&o.WholeStore, "whole-store", false, "the store holds the one cluster `--cluster` names alone: read it whole, not by the ClusterMap's label (a job per cluster with its own Prometheus)")

	return func() error {
		if err := checkSource(fs, o); err != nil {
			return err
		}
		for _, h := range headers {
			name, value, ok := strings.Cut(h, ":")
			name, value = strings.TrimSpace(name), strings.TrimSpace(value)
			if !ok || name == "" || strings.ContainsAny(name, " \t") {
				// Only the name is quoted: the value may be a credential.
				first, _, _ := strings.Cut(strings.TrimSpace(h), " ")
				return config.FlagErrorf("invalid `--prometheus-header` %q…: write it as 'Name: value'", first)
			}
			if pc.Headers == nil {
				pc.Headers = http.Header{}
			}
			pc.Headers.Add(name, value)
		}
		if cluster != "" {
			name, value, ok := strings.Cut(cluster, "=")
			if !ok || name == "" || value == "" {
				return config.FlagErrorf("invalid `--cluster-label` %q: write it as name=value, e.g. cluster=prod-eu", cluster)
			}
			name, value = strings.TrimSpace(name), strings.Trim(strings.TrimSpace(value), `"`)
			if !labelNameRE.MatchString(name) || value == "" {
				return config.FlagErrorf("invalid `--cluster-label` %q: write it as name=value, e.g. cluster=prod-eu", cluster)
			}
			o.ClusterLabel = plan.ClusterLabel{Name: name, Value: value}
		}
		p, err := preset.Parse(presetName)
		if err != nil {
			return config.FlagErrorf("invalid `--metrics-preset`: %v", err)
		}
		o.Preset = p
		if pc.Timeout <= 0 {
			return config.FlagErrorf("invalid `--prometheus-timeout` %s: want a positive duration", pc.Timeout)
		}
		if at != "" {
			t, err := ParseTime(at)
			if err != nil {
				return config.FlagErrorf("invalid `--at`: %v", err)
			}
			o.At = t
		}
		return nil
	}
}

// checkSource checks that exactly one source is named, and that the
// flags of a server go with one.
func checkSource(fs *pflag.FlagSet, o *Options) error {
	pc := &o.Prometheus
	switch {
	case o.MetricsFile == "" && pc.URL == "":
		return config.FlagErrorf("`--metrics-file` or `--prometheus-url` is required")
	case o.MetricsFile != "" && pc.URL != "":
		return config.FlagErrorf("`--metrics-file` and `--prometheus-url` exclude each other: usage comes from one source")
	case pc.URL == "":
		for _, name := range PrometheusFlags() {
			if fs.Changed(name) {
				return config.FlagErrorf("`--%s` needs `--prometheus-url`", name)
			}
		}
	default:
		if err := prometheus.CheckURL(pc.URL); err != nil {
			return config.FlagErrorf("invalid `--prometheus-url`: %v", err)
		}
	}
	return nil
}

// PrometheusFlags are the flags that mean nothing without
// --prometheus-url.
func PrometheusFlags() []string {
	return []string{
		"prometheus-token-file", "prometheus-token-env", "prometheus-user", "prometheus-password-file", "prometheus-header",
		"prometheus-ca-file", "prometheus-cert-file", "prometheus-key-file", "prometheus-insecure-skip-verify",
		"prometheus-timeout",
	}
}

// labelNameRE is a label name as Prometheus' classic rules write one.
var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// PresetNames are --metrics-preset's values.
func PresetNames() []string {
	var out []string
	for _, p := range preset.All() {
		out = append(out, string(p))
	}
	return out
}

// Evaluation times a plan can plausibly be made at: anything else is a
// typo (0, a time in milliseconds, 1e20).
var (
	earliestAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	latestAt   = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// ParseTime reads an evaluation time: RFC 3339, or Unix seconds, between
// the years 2000 and 3000.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		secs, perr := strconv.ParseFloat(s, 64)
		if perr != nil || math.IsNaN(secs) || math.IsInf(secs, 0) {
			return time.Time{}, fmt.Errorf("%q is neither RFC 3339 (2026-11-30T12:00:00Z) nor Unix seconds", s)
		}
		// Checked before the conversion, which overflows beyond int64.
		if secs < float64(earliestAt.Unix()) || secs >= float64(latestAt.Unix()) {
			return time.Time{}, fmt.Errorf("%q is not a plausible time: Unix seconds from %d (2000) to %d (3000)", s, earliestAt.Unix(), latestAt.Unix())
		}
		whole, frac := math.Modf(secs)
		t = time.Unix(int64(whole), int64(frac*1e9))
	}
	if t.Before(earliestAt) || !t.Before(latestAt) {
		return time.Time{}, fmt.Errorf("%q is not a plausible time: use one from the year 2000 to 3000", s)
	}
	return t.UTC(), nil
}
