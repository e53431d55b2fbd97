package main

import (
	"github.com/spf13/pflag"

	"github.com/gpu-rightsizing/recommender/internal/run"
)

// registerObserve registers run's settings of what it tells about itself
// when it ends (docs/observe.md): its summary on stdout, its metrics, an
// Event on its CronJob, a chat message.
func registerObserve(fs *pflag.FlagSet, o *run.Observe) {
	fs.StringVarP(&o.Output, "output", "o", "", "output `format`: table, json or markdown (for a CI job's summary; run's: docs/observe.md); run's default: the table when stdout is a terminal, else nothing (plan's: table)")
	fs.StringVar(&o.PushgatewayURL, "pushgateway-url", "", "push the run's metrics to the Prometheus Pushgateway at this `URL`")
	fs.StringVar(&o.PushgatewayJob, "pushgateway-job", run.DefaultPushgatewayJob, "the `job` label of the pushed metrics (one per repository a schedule runs on)")
	fs.StringVar(&o.MetricsTextfile, "metrics-textfile", "", "write the run's metrics to this `file` for the node exporter's textfile collector (*.prom)")
	fs.StringVar(&o.WebhookURLFile, "webhook-url-file", "", "post the run's summary to the chat webhook (Slack-compatible) whose URL is in this `file`")
	fs.StringVar(&o.WebhookURLEnv, "webhook-url-env", "", "post the run's summary to the chat webhook whose URL is in this environment `variable`")
	fs.StringVar(&o.EventCronJob, "event-cronjob", "", "record the run's outcome as an Event on this CronJob, `NAMESPACE/NAME` (the chart sets it), through --kubeconfig or the service account")
}
