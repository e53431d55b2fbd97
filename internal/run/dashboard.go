package run

import (
	"context"
	"fmt"

	"github.com/gpu-rightsizing/recommender/internal/dashboard"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/publish"
)

// readDashboard finds the dashboard and what its ticked boxes ask, when
// Dashboard is on. A dashboard that cannot be read must not stop the
// pull requests: the run goes on without it, and says so.
func (o *Options) readDashboard(ctx context.Context, forge publish.Forge) *dashboard.Dashboard {
	is, ok := forge.(dashboard.Issues)
	if !o.Dashboard || !ok {
		return nil
	}
	// A run limited by --cluster keeps a dashboard of its own: one job
	// per cluster leaves the others' alone.
	d, err := dashboard.Read(ctx, is, dashboard.Options{DryRun: o.DryRun, Logger: o.Logger, Clusters: o.Filter.Clusters})
	if err != nil {
		o.Logger.Error("dashboard: not read; this run acts on no ticked box and leaves it as it is (the token needs to read and write issues, or turn it off with --dashboard=false)", "err", err)
		return nil
	}
	return d
}

// writeDashboard brings the dashboard up to date and prints one line
// about it; it reports whether that failed.
func (o *Options) writeDashboard(ctx context.Context, d *dashboard.Dashboard, p *plan.Plan, rep *publish.Report, findings map[string][]string) bool {
	if d == nil {
		return false
	}
	res, err := d.Write(ctx, dashboard.Input{Plan: p, Grouping: plan.Grouping(o.GroupBy), Publish: rep, Findings: findings})
	if err != nil {
		o.Logger.Error("dashboard: not written (the token needs to write issues, or turn it off with --dashboard=false)", "err", err)
		return true
	}
	outcome := string(res.Outcome)
	if o.DryRun && (res.Outcome == dashboard.Created || res.Outcome == dashboard.Edited) {
		// Nothing was written: its detail says what would be.
		outcome = "not written"
	}
	line := fmt.Sprintf("dashboard: %s", outcome)
	if res.Number > 0 {
		line += fmt.Sprintf(" #%d %s", res.Number, res.URL)
	}
	if res.Detail != "" {
		line += " (" + res.Detail + ")"
	}
	// With the run's tables: a JSON or Markdown summary on stdout stays
	// whole.
	fmt.Fprintln(o.tables(), plan.Printable(line))
	return false
}
