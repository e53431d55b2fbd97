package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/cluster"
	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/notify"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
	"github.com/gpu-rightsizing/recommender/internal/runmetrics"
	runsummary "github.com/gpu-rightsizing/recommender/internal/summary"
)

// observeFlags are run's settings of what it tells about itself when it
// ends (docs/observe.md): its summary on stdout, its metrics, an Event on
// its CronJob, a chat message.
type observeFlags struct {
	Output          string
	PushgatewayURL  string
	PushgatewayJob  string
	MetricsTextfile string
	WebhookURLFile  string
	WebhookURLEnv   string
	EventCronJob    string

	cronJob notify.CronJob
	// webhookURL is the webhook's URL, read once the flags are checked.
	webhookURL string
}

func (o *observeFlags) register(fs *pflag.FlagSet) {
	fs.StringVarP(&o.Output, "output", "o", "", "output `format`: table, json or markdown (for a CI job's summary; run's: docs/observe.md); run's default: the table when stdout is a terminal, else nothing (plan's: table)")
	fs.StringVar(&o.PushgatewayURL, "pushgateway-url", "", "push the run's metrics to the Prometheus Pushgateway at this `URL`")
	fs.StringVar(&o.PushgatewayJob, "pushgateway-job", runmetrics.DefaultJob, "the `job` label of the pushed metrics (one per repository a schedule runs on)")
	fs.StringVar(&o.MetricsTextfile, "metrics-textfile", "", "write the run's metrics to this `file` for the node exporter's textfile collector (*.prom)")
	fs.StringVar(&o.WebhookURLFile, "webhook-url-file", "", "post the run's summary to the chat webhook (Slack-compatible) whose URL is in this `file`")
	fs.StringVar(&o.WebhookURLEnv, "webhook-url-env", "", "post the run's summary to the chat webhook whose URL is in this environment `variable`")
	fs.StringVar(&o.EventCronJob, "event-cronjob", "", "record the run's outcome as an Event on this CronJob, `NAMESPACE/NAME` (the chart sets it), through --kubeconfig or the service account")
}

func (o *observeFlags) check() error {
	switch o.Output {
	case "", "table", "json", "markdown":
	default:
		return config.FlagErrorf("invalid `--output` %q: use table, json or markdown", o.Output)
	}
	if o.PushgatewayURL != "" {
		if err := runmetrics.CheckURL(o.PushgatewayURL); err != nil {
			return config.FlagErrorf("`--pushgateway-url`: %v", err)
		}
		if o.PushgatewayJob == "" {
			return config.FlagErrorf("`--pushgateway-job` must not be empty")
		}
	}
	if o.WebhookURLFile != "" && o.WebhookURLEnv != "" {
		return config.FlagErrorf("`--webhook-url-file` and `--webhook-url-env` exclude each other")
	}
	if o.WebhookURLFile != "" || o.WebhookURLEnv != "" {
		// Read now: a missing secret is a mistake to hear of before the
		// run does its work, not a warning after it.
		var err error
		if o.webhookURL, err = o.readWebhookURL(); err != nil {
			return config.FlagErrorf("%v", err)
		}
	}
	if o.EventCronJob != "" {
		var err error
		if o.cronJob, err = notify.ParseCronJob(o.EventCronJob); err != nil {
			return config.FlagErrorf("`--event-cronjob` %v", err)
		}
	}
	return nil
}

// table is where the run's tables go: stdout when asked for, or by
// default when stdout is a terminal; a pod's or a CI job's stdout gets
// no table to mix with its logs.
func (o *observeFlags) table(s streams) io.Writer {
	if o.Output == "table" || o.Output == "" && isTerminal(s.Out) {
		return s.Out
	}
	return io.Discard
}

// reportTimeout bounds each report a run makes when it ends.
const reportTimeout = 20 * time.Second

// finish tells what the run did, once it ended at end: the summary on
// stdout as --output asks (Markdown with the plan p, when the run got to
// one), then the metrics, the Event and the webhook's
// message. A failure of these is a warning, not the run's failure: the
// run's work is done, a failed Job would be run again for it, and an
// alert on stale metrics (docs/observe.md) catches metrics that stop
// arriving. Only writing stdout fails the run.
func (o *observeFlags) finish(ctx context.Context, out io.Writer, log *slog.Logger, kubeconfig string, s runsummary.Summary, p *plan.Plan, end time.Time) error {
	var err error
	switch o.Output {
	case "json":
		err = s.WriteJSON(out)
	case "markdown":
		// The run, then what it decided and why, for a reviewer.
		err = s.WriteMarkdown(out)
		if err == nil && p != nil {
			if _, err = io.WriteString(out, "\n"); err == nil {
				err = p.WriteMarkdown(out)
			}
		}
	}
	// A cancelled run (SIGTERM) still reports, within the pod's grace.
	ctx = context.WithoutCancel(ctx)
	report := func(what string, f func(context.Context) error) {
		c, cancel := context.WithTimeout(ctx, reportTimeout)
		defer cancel()
		if e := f(c); e != nil {
			log.Warn("the run's "+what+" failed; the run's outcome stands", "error", e.Error())
		}
	}
	if o.MetricsTextfile != "" {
		report("metrics textfile", func(context.Context) error { return runmetrics.WriteTextfile(o.MetricsTextfile, s, end) })
	}
	if o.PushgatewayURL != "" {
		report("metrics push", func(c context.Context) error {
			return runmetrics.Push(c, &http.Client{Timeout: reportTimeout}, o.PushgatewayURL, o.PushgatewayJob, s, end)
		})
	}
	if o.EventCronJob != "" {
		report("event", func(c context.Context) error { return recordEvent(c, kubeconfig, o.cronJob, s, end) })
	}
	if o.webhookURL != "" {
		report("webhook", func(c context.Context) error { return notify.Webhook{URL: o.webhookURL}.Send(c, notify.NewMessage(s)) })
	}
	return err
}

// readWebhookURL reads the webhook's URL, a secret, from its file or
// variable, and checks it is an http(s) URL without quoting it.
func (o *observeFlags) readWebhookURL() (string, error) {
	var u, from string
	if o.WebhookURLFile != "" {
		var err error
		if u, err = prometheus.ReadSecret(o.WebhookURLFile); err != nil {
			return "", fmt.Errorf("`--webhook-url-file`: %w", err)
		}
		from = "the file " + o.WebhookURLFile
	} else {
		u = os.Getenv(o.WebhookURLEnv)
		from = "the environment variable " + o.WebhookURLEnv
	}
	if p, err := url.Parse(u); err != nil || p.Scheme != "http" && p.Scheme != "https" || p.Host == "" {
		return "", fmt.Errorf("the webhook URL in %s: want http:// or https:// and a host", from)
	}
	return u, nil
}

func recordEvent(ctx context.Context, kubeconfig string, cj notify.CronJob, s runsummary.Summary, end time.Time) error {
	cfg, err := cluster.Config(cluster.Options{Kubeconfig: kubeconfig})
	if err != nil {
		return err
	}
	// In a pod, the host name is the pod's name.
	host, _ := os.Hostname()
	rec, err := notify.NewRecorder(cfg, host)
	if err != nil {
		return err
	}
	return rec.Record(ctx, cj, s, end)
}

// runOutcome is how a run ended, from its error and its report.
func runOutcome(err error, rep *publish.Report) runsummary.Outcome {
	switch {
	case errors.Is(err, errProblems):
		return runsummary.Problems
	case errors.Is(err, errChanges):
		return runsummary.ChangesProposed
	case err != nil:
		return runsummary.Failed
	case rep != nil && rep.Count(publish.Opened)+rep.Count(publish.Updated) > 0:
		return runsummary.ChangesProposed
	}
	return runsummary.NothingToDo
}
