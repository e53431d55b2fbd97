package run

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/cluster"
	"github.com/gpu-rightsizing/recommender/internal/config"
	"github.com/gpu-rightsizing/recommender/internal/metrics/prometheus"
	"github.com/gpu-rightsizing/recommender/internal/notify"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/runmetrics"
	"github.com/gpu-rightsizing/recommender/internal/summary"
)

// Observe says what a run tells about itself when it ends
// (docs/observe.md): its summary on Out, its metrics, an Event on its
// CronJob, a chat message.
type Observe struct {
	// Output is the summary's format on Out: table, json or markdown;
	// "": the tables when Out is a terminal, else nothing.
	Output          string
	PushgatewayURL  string
	PushgatewayJob  string
	MetricsTextfile string
	// WebhookURLFile or WebhookURLEnv holds the chat webhook's URL, a
	// secret.
	WebhookURLFile string
	WebhookURLEnv  string
	// EventCronJob is NAMESPACE/NAME.
	EventCronJob string

	cronJob notify.CronJob
	// webhookURL is the webhook's URL, read once the settings are checked.
	webhookURL string
}

// DefaultPushgatewayJob is the job label of pushed metrics when none is
// named.
const DefaultPushgatewayJob = runmetrics.DefaultJob

// Check checks the settings and reads the webhook's URL: a missing
// secret is a mistake to hear of before the run does its work.
func (o *Observe) Check() error {
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

// tables is where the run's tables go: Out when asked for, or by default
// when Out is a terminal; a pod's or a CI job's stdout gets no table to
// mix with its logs.
func (o *Options) tables() io.Writer {
	if o.Observe.Output == "table" || o.Observe.Output == "" && o.Terminal {
		return o.Out
	}
	return io.Discard
}

// reportTimeout bounds each report a run makes when it ends.
const reportTimeout = 20 * time.Second

// finish tells what the run did, once it ended at end: the summary on
// out as Output asks (Markdown with the plan p, when the run got to
// one), then the metrics, the Event and the webhook's message. A failure
// of these is a warning, not the run's failure: the run's work is done,
// a failed Job would be run again for it, and an alert on stale metrics
// (docs/observe.md) catches metrics that stop arriving. Only writing out
// fails the run.
func (o *Observe) finish(ctx context.Context, out io.Writer, log *slog.Logger, kubeconfig string, s summary.Summary, p *plan.Plan, end time.Time) error {
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
func (o *Observe) readWebhookURL() (string, error) {
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

// recordEvent records the run's outcome as an Event on the CronJob cj,
// in the cluster the kubeconfig (or cluster.Config's rules) names.
func recordEvent(ctx context.Context, kubeconfig string, cj notify.CronJob, s summary.Summary, end time.Time) error {
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
