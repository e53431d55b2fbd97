package main

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpu-rightsizing/recommender/internal/metrics"
	"github.com/gpu-rightsizing/recommender/internal/plan"
)

type planOptions struct {
	IO     streams
	Logger *slog.Logger

	Repo             string
	MetricsFile      string
	At               time.Time // zero: the newest recorded sample, or now
	Output           string
	PolicyPaths      []string
	DefaultNamespace string

	// Now is the clock, for the default evaluation time.
	Now func() time.Time
}

func newCmdPlan(io streams, logger func() (*slog.Logger, error), runF func(context.Context, *planOptions) error) *cobra.Command {
	opts := &planOptions{IO: io, Now: time.Now}
	var at string
	cmd := &cobra.Command{
		Use:   "plan --repo DIR --metrics-file FILE",
		Short: "Print the decisions, reasons and diffs for a repository, writing nothing",
		Example: "  recommender plan --repo examples/quickstart --metrics-file examples/quickstart/metrics.om\n" +
			"  recommender plan --repo . --metrics-file usage.om --at 2026-11-30T12:00:00Z --output json",
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Repo == "" {
				return flagErrorf("`--repo` is required")
			}
			if opts.MetricsFile == "" {
				return flagErrorf("`--metrics-file` is required: the Prometheus source is not built yet")
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
			if runF != nil {
				return runF(cmd.Context(), opts)
			}
			return runPlan(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Repo, "repo", "", "repository checkout to read policies and manifests from")
	f.StringVar(&opts.MetricsFile, "metrics-file", "", "recorded usage: OpenMetrics text with timestamps (.om, or .om.gz)")
	f.StringVar(&at, "at", "", "evaluation time, RFC 3339 or Unix seconds (default: the newest recorded sample)")
	f.StringVarP(&opts.Output, "output", "o", "table", "output `format`: table or json")
	f.StringArrayVar(&opts.PolicyPaths, "policies", nil, "read policies only from this `path` in the repository (repeatable)")
	f.StringVar(&opts.DefaultNamespace, "default-namespace", "default", "namespace of manifests that name none")
	return cmd
}

func runPlan(ctx context.Context, opts *planOptions) error {
	if st, err := os.Stat(opts.Repo); err != nil || !st.IsDir() {
		return fmt.Errorf("repository %s: not a readable directory", opts.Repo)
	}
	src, err := metrics.OpenRecorded(opts.MetricsFile)
	if err != nil {
		return err
	}
	at, err := evaluationTime(opts, src.Span())
	if err != nil {
		return err
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
