// Package runmetrics is a run's metrics, the Prometheus way for batch
// jobs (docs/observe.md): a registry of gauges built from the run's
// summary — decisions by action, pull requests by outcome, problems by
// cause, live changes by outcome, the GPU share requested and
// recommended, the duration, the end time and the last success time —
// pushed to a Pushgateway or written as a node-exporter textfile.
package runmetrics

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"

	"github.com/gpu-rightsizing/recommender/internal/localfile"
	"github.com/gpu-rightsizing/recommender/internal/summary"
)

// Prefix starts every metric's name.
const Prefix = "gpu_rightsizing_"

// LastSuccess is the metric an alert on a stale job reads: when the last
// run that did not fail ended, in Unix seconds.
const LastSuccess = Prefix + "last_success_timestamp_seconds"

// DefaultJob is the Pushgateway's job label of the tool's pushes.
const DefaultJob = "gpu-rightsizing-recommender"

// Registry holds the metrics of one run that ended at end. A failed run
// has no last success: lastSuccess, when not zero, carries an earlier
// one forward (a textfile is replaced whole); the Pushgateway keeps its
// own, as Push adds rather than replaces after a failure.
func Registry(s summary.Summary, end, lastSuccess time.Time) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	gauge := func(name, help string, v float64) {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: Prefix + name, Help: help})
		g.Set(v)
		reg.MustRegister(g)
	}
	vec := func(name, help, label string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: Prefix + name, Help: help}, []string{label})
		reg.MustRegister(g)
		return g
	}
	gauge("run_duration_seconds", "How long the last run took.", s.DurationSeconds)
	gauge("last_run_timestamp_seconds", "When the last run ended, in Unix seconds.", unix(end))
	switch {
	case s.Outcome.Succeeded():
		gauge("last_success_timestamp_seconds", "When the last run that did not fail ended, in Unix seconds.", unix(end))
	case !lastSuccess.IsZero():
		gauge("last_success_timestamp_seconds", "When the last run that did not fail ended, in Unix seconds.", unix(lastSuccess))
	}
	dry := 0.0
	if s.DryRun {
		dry = 1
	}
	gauge("dry_run", "1 when the last run was a dry run, which wrote nothing.", dry)
	outcome := vec("run_outcome", "1 for the outcome of the last run (nothing-to-do, changes-proposed, problems, failed), 0 for the others.", "outcome")
	for _, o := range summary.Outcomes() {
		v := 0.0
		if o == s.Outcome {
			v = 1
		}
		outcome.WithLabelValues(string(o)).Set(v)
	}
	decisions := vec("decisions", "The last run's decisions, by action.", "action")
	for _, a := range summary.Actions() {
		decisions.WithLabelValues(string(a)).Set(float64(s.Decisions[a]))
	}
	prs := vec("pull_requests", "The last run's pull requests, by outcome.", "outcome")
	for _, o := range summary.PullRequestOutcomes() {
		prs.WithLabelValues(string(o)).Set(float64(s.PullRequests.Counts[o]))
	}
	problems := vec("problems", "The input the last run refused, by cause.", "cause")
	for _, c := range s.ProblemCauses() {
		problems.WithLabelValues(string(c)).Set(float64(s.Problems.Counts[c]))
	}
	if s.Live != nil {
		lv := vec("live_changes", "The last run's live changes and reconciles, by outcome.", "outcome")
		for o, n := range s.Live.Counts {
			lv.WithLabelValues(string(o)).Set(float64(n))
		}
	}
	gauge("requested_gpus", "GPU share the workloads the last run decided on request now, in GPUs.", s.GPUs.Requested)
	gauge("recommended_gpus", "GPU share the same workloads would request with every recommended change merged, in GPUs.", s.GPUs.Recommended)
	return reg
}

func unix(t time.Time) float64 { return float64(t.UnixMilli()) / 1000 }

// CheckURL says what is wrong with a Pushgateway's base URL: http or
// https with a host, and nothing that could be a credential (user
// information, a query), which would otherwise reach error messages.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return errors.New("pushgateway URL: not a valid URL")
	}
	shown := (&url.URL{Scheme: u.Scheme, Opaque: u.Opaque, Host: u.Host, Path: u.Path}).String()
	switch {
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return fmt.Errorf("pushgateway URL %s: want http:// or https:// and a host", shown)
	case u.User != nil:
		return fmt.Errorf("pushgateway URL %s: carries user information; put an authenticating proxy in front instead", shown)
	case u.RawQuery != "" || u.Fragment != "":
		return fmt.Errorf("pushgateway URL %s: a base URL takes no query or fragment", shown)
	}
	return nil
}

// Push sends the run's metrics to the Pushgateway at gateway under job,
// within ctx. After a success it replaces the job's group (PUT), so that
// nothing of an earlier run lingers; after a failure it only adds (POST),
// which keeps the last success time an earlier run pushed.
func Push(ctx context.Context, client *http.Client, gateway, job string, s summary.Summary, end time.Time) error {
	p := push.New(gateway, job).Gatherer(Registry(s, end, time.Time{})).Client(client)
	var err error
	if s.Outcome.Succeeded() {
		err = p.PushContext(ctx)
	} else {
		err = p.AddContext(ctx)
	}
	if err != nil {
		return fmt.Errorf("push metrics to the pushgateway: %w", err)
	}
	return nil
}

// WriteTextfile writes the run's metrics to path in the text format the
// node exporter's textfile collector reads, replacing the file at once
// (a temporary file renamed over it), so that the collector never reads
// half of it. A failed run carries the last success time of the file it
// replaces forward.
func WriteTextfile(path string, s summary.Summary, end time.Time) error {
	var last time.Time
	if !s.Outcome.Succeeded() {
		var err error
		if last, err = readLastSuccess(path); err != nil {
			return err
		}
	}
	if err := prometheus.WriteToTextfile(path, Registry(s, end, last)); err != nil {
		return fmt.Errorf("write metrics textfile: %w", err)
	}
	return nil
}

// maxTextfile bounds what is read of an earlier textfile: the tool's own
// is a few kilobytes.
const maxTextfile = 1 << 20

// readLastSuccess reads the last success time from an earlier textfile;
// zero when there is none. The file is opened without blocking and must
// be a regular file: a FIFO at the path would hang the run's end.
func readLastSuccess(path string) (time.Time, error) {
	b, err := localfile.Read(path, maxTextfile)
	if errors.Is(err, fs.ErrNotExist) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("metrics textfile: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		v, ok := strings.CutPrefix(strings.TrimSuffix(line, "\n"), LastSuccess+" ")
		if !ok {
			continue
		}
		sec, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || sec <= 0 {
			return time.Time{}, fmt.Errorf("read metrics textfile %s: %s %q is not a time", path, LastSuccess, v)
		}
		return time.UnixMilli(int64(sec * 1000)).UTC(), nil
	}
	return time.Time{}, nil
}
