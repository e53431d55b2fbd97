// Package notify tells people how a run went, where they look
// (docs/observe.md): a Kubernetes Event on the job's CronJob, which
// `kubectl describe cronjob` and event exporters show, and a message to a
// chat webhook (Slack's incoming-webhook JSON, which Mattermost, Rocket.Chat
// and others accept). Both render the run's summary; neither failing
// fails the run.
package notify
