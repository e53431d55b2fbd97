package main

import (
	"context"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/metrics/openmetrics"
	"github.com/gpu-rightsizing/recommender/internal/metrics/preset"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/neighbours"
	"github.com/gpu-rightsizing/recommender/internal/placement"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// usageFlags say where usage comes from and when a plan is made: plan and
// run share them.
type usageFlags struct {
	MetricsFile string
	// Prometheus is the server to read usage from, when URL is set;
	// exactly one of it and MetricsFile is.
	Prometheus prometheus.Config
	// Preset names the exporter whose series policies read by default.
	Preset preset.Preset
	At     time.Time // zero: the newest recorded sample, or now
	// Progress counts the queries on a terminal; nil: none shown.
	Progress *progress
}

// addUsageFlags registers the usage flags on cmd, and returns what parses
// and checks them into u, for cmd's RunE to call first.
func addUsageFlags(cmd *cobra.Command, u *usageFlags) func() error {
	var at, cluster, presetName string
	var headers []string
	f := cmd.Flags()
	f.StringVar(&u.MetricsFile, "metrics-file", "", "recorded usage: OpenMetrics text with timestamps (.om, or .om.gz)")
	f.StringVar(&at, "at", "", "evaluation time, RFC 3339 or Unix seconds (default: the newest recorded sample, or now with --prometheus-url)")
	f.StringVar(&presetName, "metrics-preset", string(preset.Kubex), "`exporter` whose series policies read when they name none: "+
		"kubex (gpu-process-exporter), hami (HAMi vGPU monitor, kai-resource-isolator), dcgm (dcgm-exporter; whole GPUs only)")
	pc := &u.Prometheus
	f.StringVar(&pc.URL, "prometheus-url", "", "read usage from the server at `URL`, with Prometheus' HTTP API; include any path prefix (Mimir's /prometheus)")
	f.StringVar(&pc.BearerTokenFile, "prometheus-token-file", "", "read the bearer token from this `file`")
	f.StringVar(&pc.BearerTokenEnv, "prometheus-token-env", "", "read the bearer token from this environment `variable`")
	f.StringVar(&pc.BasicAuthUser, "prometheus-user", "", "basic auth `user`")
	f.StringVar(&pc.BasicAuthPasswordFile, "prometheus-password-file", "", "read the basic auth password from this `file`")
	f.StringArrayVar(&headers, "prometheus-header", nil, "send the header `'Name: value'` with every request, e.g. 'X-Scope-OrgID: tenant' for Mimir (repeatable)")
	f.StringVar(&pc.CAFile, "prometheus-ca-file", "", "verify the server with the CA certificates in this PEM `file`")
	f.StringVar(&pc.CertFile, "prometheus-cert-file", "", "client certificate PEM `file`, for mutual TLS")
	f.StringVar(&pc.KeyFile, "prometheus-key-file", "", "client key PEM `file`, for mutual TLS")
	f.BoolVar(&pc.InsecureSkipVerify, "prometheus-insecure-skip-verify", false, "do not verify the server's certificate (logged as a warning)")
	f.DurationVar(&pc.Timeout, "prometheus-timeout", prometheus.DefaultTimeout, "time limit of each request; failing requests are tried up to 3 times")
	f.StringVar(&cluster, "cluster-label", "", "select only series with this label, `name=value`, e.g. cluster=prod-eu when several clusters share a store")

	return func() error {
		switch {
		case u.MetricsFile == "" && pc.URL == "":
			return flagErrorf("`--metrics-file` or `--prometheus-url` is required")
		case u.MetricsFile != "" && pc.URL != "":
			return flagErrorf("`--metrics-file` and `--prometheus-url` exclude each other: usage comes from one source")
		case pc.URL == "":
			for _, name := range prometheusFlags {
				if cmd.Flags().Changed(name) {
					return flagErrorf("`--%s` needs `--prometheus-url`", name)
				}
			}
		default:
			if err := prometheus.CheckURL(pc.URL); err != nil {
				return flagErrorf("invalid `--prometheus-url`: %v", err)
			}
		}
		for _, h := range headers {
			name, value, ok := strings.Cut(h, ":")
			name, value = strings.TrimSpace(name), strings.TrimSpace(value)
			if !ok || name == "" || strings.ContainsAny(name, " \t") {
				// Only the name is quoted: the value may be a credential.
				first, _, _ := strings.Cut(strings.TrimSpace(h), " ")
				return flagErrorf("invalid `--prometheus-header` %q…: write it as 'Name: value'", first)
			}
			if pc.Headers == nil {
				pc.Headers = http.Header{}
			}
			pc.Headers.Add(name, value)
		}
		if cluster != "" {
			name, value, ok := strings.Cut(cluster, "=")
			if !ok || name == "" || value == "" {
				return flagErrorf("invalid `--cluster-label` %q: write it as name=value, e.g. cluster=prod-eu", cluster)
			}
			pc.Matcher = &prometheus.LabelMatcher{Name: name, Value: strings.Trim(value, `"`)}
		}
		p, err := preset.Parse(presetName)
		if err != nil {
			return flagErrorf("invalid `--metrics-preset`: %v", err)
		}
		u.Preset = p
		if pc.Timeout <= 0 {
			return flagErrorf("invalid `--prometheus-timeout` %s: want a positive duration", pc.Timeout)
		}
		if at != "" {
			t, err := parseTime(at)
			if err != nil {
				return flagErrorf("invalid `--at`: %v", err)
			}
			u.At = t
		}
		return nil
	}
}

// matcher is the label matcher the source adds to every selector, as a
// pull request's body shows it; "" for a recording or without one.
func (u *usageFlags) matcher() string {
	if u.Prometheus.URL == "" || u.Prometheus.Matcher == nil {
		return ""
	}
	return u.Prometheus.Matcher.String()
}

// prometheusFlags are the flags that mean nothing without --prometheus-url.
var prometheusFlags = []string{
	"prometheus-token-file", "prometheus-token-env", "prometheus-user", "prometheus-password-file", "prometheus-header",
	"prometheus-ca-file", "prometheus-cert-file", "prometheus-key-file", "prometheus-insecure-skip-verify",
	"prometheus-timeout", "cluster-label",
}

// open opens the usage source and settles the evaluation time. name says
// where usage comes from, for a pull request's body. A recording keeps
// only the series that queries read, and with `--at` only their window,
// unless queries is nil.
func (u *usageFlags) open(log *slog.Logger, now func() time.Time, queries []usage.Query) (src plan.UsageSource, at time.Time, name string, err error) {
	if u.Prometheus.URL != "" {
		cfg := u.Prometheus
		cfg.Logger = log
		prom, err := prometheus.New(cfg)
		if err != nil {
			return nil, time.Time{}, "", err
		}
		src, at, name = prom, u.At, "Prometheus"
		if at.IsZero() {
			at = now().UTC()
		}
	} else {
		rec, err := openmetrics.OpenRecorded(u.MetricsFile, u.keep(queries)...)
		if err != nil {
			return nil, time.Time{}, "", err
		}
		if at, err = evaluationTime(u.At, rec.Span(), log, now); err != nil {
			return nil, time.Time{}, "", err
		}
		src, name = rec, "the recording "+filepath.Base(u.MetricsFile)
	}
	if u.Preset != "" {
		src = preset.Wrap(src, u.Preset)
	}
	return src, at, name, nil
}

// series is where a report reads series of its own: kube-state-metrics'
// for the placement without cluster access, and HAMi's per-device ones
// for the noisy neighbours; from the server, or the recording.
func (u *usageFlags) series(log *slog.Logger) (placement.Series, error) {
	if u.Prometheus.URL != "" {
		cfg := u.Prometheus
		cfg.Logger = log
		return prometheus.New(cfg)
	}
	rec, err := openmetrics.OpenRecorded(u.MetricsFile, openmetrics.KeepMetrics(append(placement.SeriesMetrics(), neighbours.HAMiMetrics()...)...))
	if err != nil {
		return nil, err
	}
	return placement.Fixed(rec.Series()), nil
}

// keep says what of a recording answering queries needs: their metrics,
// through the preset, and with `--at` the window of the longest lookback
// before it. A nil queries keeps everything.
func (u *usageFlags) keep(queries []usage.Query) []openmetrics.Option {
	if queries == nil {
		return nil
	}
	opts := []openmetrics.Option{openmetrics.KeepMetrics(u.Preset.MetricsOf(queries)...)}
	if !u.At.IsZero() {
		var longest time.Duration
		for _, q := range queries {
			longest = max(longest, q.Lookback)
		}
		opts = append(opts, openmetrics.KeepWindow(u.At.Add(-longest), u.At))
	}
	return opts
}

// plan makes the plan of the checkout opts names with usage from these
// flags: govern first, so that a recording is opened with only the series
// the queries read, then evaluate. name says where usage came from.
func (u *usageFlags) plan(ctx context.Context, opts plan.Options, log *slog.Logger, now func() time.Time) (p *plan.Plan, name string, err error) {
	opts.Logger = log
	defer u.Progress.clear()
	u.Progress.start("reading the repository", 0)
	p, err = plan.Govern(ctx, opts)
	if err != nil {
		return nil, "", err
	}
	var qs []usage.Query
	if u.MetricsFile != "" {
		qs = p.Queries
		if qs == nil {
			qs = []usage.Query{}
		}
	}
	src, at, name, err := u.open(log, now, qs)
	if err != nil {
		return nil, "", err
	}
	if err := p.Evaluate(ctx, u.Progress.source(src, len(p.Queries)), at); err != nil {
		return nil, "", err
	}
	return p, name, nil
}

// evaluationTime is the time a plan is made at: at, which must fall where
// the recording has samples, or the end of the recording. A time far from
// every sample would turn each workload into "no data, no change" without
// a word, so it is a usage mistake that names the span.
func evaluationTime(at time.Time, sp openmetrics.Span, log *slog.Logger, now func() time.Time) (time.Time, error) {
	if sp.Newest.IsZero() {
		// No samples: nothing to check against, and nothing to decide on.
		if at.IsZero() {
			return now(), nil
		}
		return at, nil
	}
	if sp.Stragglers > 0 {
		log.Warn("ignoring samples far after the rest of the recording: a clock was wrong when they were taken",
			"samples", sp.Stragglers, "newest", sp.Straggler.Format(time.RFC3339), "line", sp.Line,
			"recording", sp.String())
	}
	if at.IsZero() {
		return sp.Newest, nil
	}
	if at.Before(sp.Oldest) || at.After(sp.Newest.Add(openmetrics.EvalAfter)) {
		return time.Time{}, flagErrorf("`--at` %s is outside the recording: its samples run from %s, and an evaluation time must fall within them or up to a day after",
			at.Format(time.RFC3339), sp)
	}
	return at, nil
}
