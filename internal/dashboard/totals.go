package dashboard

import (
	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Totals are the fleet's GPU share, in GPUs, summed over the pods that
// report usage now: the manifests say how much one pod asks for, the usage
// says how many pods run.
type Totals struct {
	// Workloads counts the workloads with a GPU request, Pods their pods
	// reporting usage; Silent counts the workloads with none reporting,
	// which add nothing to the sums.
	Workloads, Pods, Silent int
	// Requested is what the pods ask for now, Recommended what they would
	// ask for with every recommendation of the run, AfterOpen with only
	// the open pull requests' merged.
	Requested, Recommended, AfterOpen float64
	// UsedP95 is the sum over the pods of each pod's 95th percentile of
	// its busier metric over the lookback, in GPUs.
	UsedP95 float64
}

// totals sums the plan's decisions; open says which workloads (by ref
// string) an open pull request changes.
func totals(p *plan.Plan, open map[string]bool) Totals {
	var t Totals
	for _, d := range p.Decisions {
		if d.Current.Form == engine.NoGPU || d.Current.GPUs <= 0 {
			continue
		}
		add(&t, d, reporting(d.Usage), open)
	}
	return t
}

// add counts decision d, with pods its pods reporting usage, into t.
func add(t *Totals, d plan.Decision, pods []usage.Pod, open map[string]bool) {
	t.Workloads++
	if len(pods) == 0 {
		t.Silent++
		return
	}
	n := float64(len(pods))
	t.Pods += len(pods)
	t.Requested += d.Current.GPUs * n
	rec := d.Current.GPUs
	if d.Action.Changes() {
		rec = d.Recommended.GPUs
	}
	t.Recommended += rec * n
	if open[d.Workload.Ref.String()] {
		t.AfterOpen += rec * n
	} else {
		t.AfterOpen += d.Current.GPUs * n
	}
	sources := d.Rules.Sources()
	for _, pod := range pods {
		t.UsedP95 += podP95(pod, d.Current.GPUs, sources)
	}
}

// reporting is the pods of a workload that run now: those
// kube-state-metrics says are live, or, without it, every pod with
// samples.
func reporting(w usage.Workload) []usage.Pod {
	var out []usage.Pod
	for _, p := range w.Pods {
		if w.LiveKnown && !p.Live {
			continue
		}
		if !w.LiveKnown && !p.Digest().Sampled {
			continue
		}
		out = append(out, p)
	}
	return out
}

// podP95 is a pod's 95th percentile, nearest rank, of each metric's valid
// samples, in GPUs, and the larger of the two: a metric read relative to
// the allocation is scaled by the pod's share, as the engine does.
func podP95(p usage.Pod, current float64, sources map[usage.Metric]*engine.MetricRules) float64 {
	best := 0.0
	p95 := p.Digest().P95
	for _, m := range usage.Metrics {
		v, ok := p95[m]
		if !ok {
			continue
		}
		v /= 100
		if src := sources[m]; src != nil && src.Interpretation == engine.CurrentAllocation {
			share := p.Allocation
			if share <= 0 {
				share = current
			}
			v *= share
		}
		best = max(best, v)
	}
	return best
}
