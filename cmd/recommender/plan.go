package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

type planOptions struct {
	IO     streams
	Logger *slog.Logger

	Repo        string
	MetricsFile string
	// Prometheus is the server to read usage from, when URL is set;
	// exactly one of it and MetricsFile is.
	Prometheus metrics.PrometheusConfig
	// Preset names the exporter whose series policies read by default.
	Preset           metrics.Preset
	At               time.Time // zero: the newest recorded sample, or now
	Output           string
	PolicyPaths      []string
	DefaultNamespace string

	// Now is the clock, for the default evaluation time.
	Now func() time.Time
}

func newCmdPlan(io streams, logger func() (*slog.Logger, error), runF func(context.Context, *planOptions) error) *cobra.Command {
	opts := &planOptions{IO: io, Now: time.Now}
	var at, cluster, preset string
	var headers []string
	cmd := &cobra.Command{
		Use:   "plan --repo DIR (--metrics-file FILE | --prometheus-url URL)",
		Short: "Print the decisions, reasons and diffs for a repository, writing nothing",
		Long: "Print the decisions, reasons and diffs for a repository, writing nothing.\n\n" +
			"Usage comes from a recorded file (--metrics-file) or from a server with Prometheus' HTTP API\n" +
			"(--prometheus-url: Prometheus, Thanos, Mimir, VictoriaMetrics). Secrets are read from files or\n" +
			"the environment, never given on the command line.",
		Example: "  recommender plan --repo examples/quickstart --metrics-file examples/quickstart/metrics.om\n" +
			"  recommender plan --repo . --metrics-file usage.om --at 2026-11-30T12:00:00Z --output json\n" +
			"  recommender plan --repo . --prometheus-url http://prometheus.monitoring:9090\n" +
			"  recommender plan --repo . --prometheus-url https://mimir.example/prometheus \\\n" +
			"      --prometheus-header 'X-Scope-OrgID: gpu' --prometheus-token-file /var/run/secrets/token --cluster-label cluster=prod-eu",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Repo == "" {
				return flagErrorf("`--repo` is required")
			}
			pc := &opts.Prometheus
			switch {
			case opts.MetricsFile == "" && pc.URL == "":
				return flagErrorf("`--metrics-file` or `--prometheus-url` is required")
			case opts.MetricsFile != "" && pc.URL != "":
				return flagErrorf("`--metrics-file` and `--prometheus-url` exclude each other: usage comes from one source")
			case pc.URL == "":
				for _, name := range prometheusFlags {
					if cmd.Flags().Changed(name) {
						return flagErrorf("`--%s` needs `--prometheus-url`", name)
					}
				}
			}
			for _, h := range headers {
				name, value, ok := strings.Cut(h, ":")
				name, value = strings.TrimSpace(name), strings.TrimSpace(value)
				if !ok || name == "" || strings.ContainsAny(name, " \t") {
					return flagErrorf("invalid `--prometheus-header` %q: write it as 'Name: value'", h)
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
				pc.Matcher = &metrics.LabelMatcher{Name: name, Value: strings.Trim(value, `"`)}
			}
			p, err := metrics.ParsePreset(preset)
			if err != nil {
				return flagErrorf("invalid `--metrics-preset`: %v", err)
			}
			opts.Preset = p
			if pc.Timeout <= 0 {
				return flagErrorf("invalid `--prometheus-timeout` %s: want a positive duration", pc.Timeout)
			}
			switch opts.Output {
			case "table", "json":
			default:
				return flagErrorf("invalid `--output` %q: use table or json", opts.Output)
			}
			if at != "" {
				t, err := parseTime(at)
				if err != nil {
					return flagErrorf("invalid `--at`: %v", err)
				}
				opts.At = t
			}
			log, err := logger()
			if err != nil {
				return err
			}
			opts.Logger = log
			pc.Logger = log
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPlan(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Repo, "repo", "", "repository checkout to read policies and manifests from")
	f.StringVar(&opts.MetricsFile, "metrics-file", "", "recorded usage: OpenMetrics text with timestamps (.om, or .om.gz)")
	f.StringVar(&at, "at", "", "evaluation time, RFC 3339 or Unix seconds (default: the newest recorded sample, or now with --prometheus-url)")
	f.StringVarP(&opts.Output, "output", "o", "table", "output `format`: table or json")
	f.StringArrayVar(&opts.PolicyPaths, "policies", nil, "read policies only from this `path` in the repository (repeatable)")
	f.StringVar(&opts.DefaultNamespace, "default-namespace", "default", "namespace of manifests that name none")
	f.StringVar(&preset, "metrics-preset", string(metrics.PresetKubex), "`exporter` whose series policies read when they name none: "+
		"kubex (gpu-process-exporter), hami (HAMi vGPU monitor, kai-resource-isolator), dcgm (dcgm-exporter; whole GPUs only)")

	pc := &opts.Prometheus
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
	f.DurationVar(&pc.Timeout, "prometheus-timeout", metrics.DefaultPrometheusTimeout, "time limit of each request; failing requests are tried up to 3 times")
	f.StringVar(&cluster, "cluster-label", "", "select only series with this label, `name=value`, e.g. cluster=prod-eu when several clusters share a store")
	return cmd
}

// prometheusFlags are the flags that mean nothing without --prometheus-url.
var prometheusFlags = []string{
	"prometheus-token-file", "prometheus-token-env", "prometheus-user", "prometheus-password-file", "prometheus-header",
	"prometheus-ca-file", "prometheus-cert-file", "prometheus-key-file", "prometheus-insecure-skip-verify",
	"prometheus-timeout", "cluster-label",
}

func runPlan(ctx context.Context, opts *planOptions) error {
	if st, err := os.Stat(opts.Repo); err != nil || !st.IsDir() {
		return fmt.Errorf("repository %s: not a readable directory", opts.Repo)
	}
	var src plan.UsageSource
	var at time.Time
	if opts.Prometheus.URL != "" {
		prom, err := metrics.NewPrometheus(opts.Prometheus)
		if err != nil {
			return err
		}
		src, at = prom, opts.At
		if at.IsZero() {
			at = opts.Now().UTC()
		}
	} else {
		rec, err := metrics.OpenRecorded(opts.MetricsFile)
		if err != nil {
			return err
		}
		if at, err = evaluationTime(opts, rec.Span()); err != nil {
			return err
		}
		src = rec
	}
	if opts.Preset != "" && opts.Preset != metrics.PresetKubex {
		src = metrics.WithPreset(src, opts.Preset)
	}
	p, err := plan.Make(ctx, plan.Options{
		Repo: opts.Repo, PolicyPaths: opts.PolicyPaths, At: at, Source: src,
		DefaultNamespace: opts.DefaultNamespace, Logger: opts.Logger,
	})
	if err != nil {
		return err
	}
	opts.Logger.Info("plan ready", "summary", p.Summary())
	if opts.Output == "json" {
		err = p.WriteJSON(opts.IO.Out)
	} else {
		err = p.WriteTable(opts.IO.Out)
	}
	if err != nil {
		return err
	}
	if len(p.Problems) > 0 {
		return errProblems
	}
	return nil
}

// evaluationTime is the time a plan is made at: --at, which must fall
// where the recording has samples, or the end of the recording. A time
// far from every sample would turn each workload into "no data, no
// change" without a word, so it is a usage mistake that names the span.
func evaluationTime(opts *planOptions, sp metrics.Span) (time.Time, error) {
	if sp.Newest.IsZero() {
		// No samples: nothing to check against, and nothing to decide on.
		if opts.At.IsZero() {
			return opts.Now(), nil
		}
		return opts.At, nil
	}
	if sp.Stragglers > 0 {
		opts.Logger.Warn("ignoring samples far after the rest of the recording: a clock was wrong when they were taken",
			"samples", sp.Stragglers, "newest", sp.Straggler.Format(time.RFC3339), "line", sp.Line,
			"recording", sp.String())
	}
	if opts.At.IsZero() {
		return sp.Newest, nil
	}
	if opts.At.Before(sp.Oldest) || opts.At.After(sp.Newest.Add(metrics.StragglerGap)) {
		return time.Time{}, flagErrorf("`--at` %s is outside the recording: its samples run from %s, and an evaluation time must fall within them or up to a day after",
			opts.At.Format(time.RFC3339), sp)
	}
	return opts.At, nil
}

// Evaluation times a plan can plausibly be made at: anything else is a
// typo (0, a time in milliseconds, 1e20).
var (
	earliestAt = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	latestAt   = time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)
)

// parseTime reads an evaluation time: RFC 3339, or Unix seconds, between
// the years 2000 and 3000.
func parseTime(s string) (time.Time, error) {
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
