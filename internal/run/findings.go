package run

import (
	"context"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/report"
)

// fleetFindings are the fleet report's findings by workload, for the pull
// requests of a run with FleetFindings set: nil when off. A report that
// cannot be made is logged and the run goes on without it: the pull
// requests are the run's job, the findings a help for their reviewers.
func (o *Options) fleetFindings(ctx context.Context, repo string, p *plan.Plan) map[string][]string {
	if o.FleetFindings == "" || o.FleetFindings == "off" {
		return nil
	}
	ro := report.Options{Repo: repo, PolicyPaths: o.PolicyPaths, Plan: p}
	series, err := o.Usage.Series(o.Logger)
	if err == nil {
		ro.Devices = series
		if o.FleetFindings == "metrics" {
			ro.Series = series
		} else {
			ro.Cluster.Kubeconfig = o.Live.Kubeconfig
			err = ro.Connect()
		}
	}
	var res *report.Result
	if err == nil {
		res, err = report.Make(ctx, ro)
	}
	if err != nil {
		o.Logger.Warn("no fleet findings in the pull requests", "error", err)
		return nil
	}
	return res.Findings()
}
