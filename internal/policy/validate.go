package policy

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/located"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// workloadTypes are the workloadTypes a scope may name. Deployment,
// StatefulSet, Rollout, LeaderWorkerSet, InferenceService and
// DynamoGraphDeployment (per service) are
// discovered and edited; the others are accepted so that a policy written
// for them loads, and what they select is a plan row with cause
// unsupported, never nothing.
var workloadTypes = []string{"Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Rollout", "LeaderWorkerSet", "InferenceService", "DynamoGraphDeployment", "Model"}

// validator checks ranges and cross-field rules after decoding, reporting
// through the decoder so that errors point at the field's line.
type validator struct{ *decoder }

func (v validator) percent(field string, p *int, lo, hi int) {
	if p != nil && (*p < lo || *p > hi) {
		v.fail(field, "%d is out of range: must be between %d and %d", *p, lo, hi)
	}
}

func (v validator) minDuration(field string, d *Duration, lo time.Duration) {
	if d != nil && d.Duration < lo {
		v.fail(field, "%s is too short: must be at least %s", d, FormatDuration(lo))
	}
}

func (v validator) contract(e *Experimental, required bool) {
	switch {
	case e == nil || e.GpuKaiContract == "":
		if required {
			v.fail("spec.experimental.gpuKaiContract", "missing: GPU/KAI settings are experimental; set it to %q", KAIContract)
		}
	case e.GpuKaiContract != KAIContract:
		v.fail("spec.experimental.gpuKaiContract", "%q is not supported: this version implements contract %q", e.GpuKaiContract, KAIContract)
	}
}

func (v validator) meta(m *Meta) {
	if m.Name == "" {
		v.fail("metadata.name", "missing")
	}
	if !m.Clustered() && m.Namespace == "" {
		v.fail("metadata.namespace", "missing: %s is namespaced and governs only its own namespace", m.Kind)
	}
}

func (v validator) strategy(s *Strategy) {
	v.meta(&s.Meta)
	sp := &s.Spec
	usesGPU := sp.Enablement.GPU != nil || sp.KAI.VLLM != nil || sp.Enablement.OverrideScheduler == "kai" ||
		sp.KAI.SetQueueWhenSpecified != nil
	v.contract(sp.Experimental, usesGPU)
	switch sp.Enablement.OverrideScheduler {
	case "", "kai", "none":
	default:
		v.fail("spec.enablement.overrideScheduler", "%q is not supported: use \"kai\" or \"none\"", sp.Enablement.OverrideScheduler)
	}
	if g := sp.Enablement.GPU; g != nil {
		q := g.Requests
		if q.Ceiling != nil && q.Ceiling.Value < 0.01 {
			v.fail("spec.enablement.gpu.requests.ceiling", "must be at least 0.01 GPU")
		}
		if q.Floor != nil {
			if q.Floor.Value < 0.01 || q.Floor.Value > 0.99 {
				v.fail("spec.enablement.gpu.requests.floor", "must be between 0.01 and 0.99 GPU")
			}
			ceiling := DefaultCeiling
			if q.Ceiling != nil {
				ceiling = q.Ceiling.Value
			}
			if q.Floor.Value >= ceiling {
				v.fail("spec.enablement.gpu.requests.floor", "%g must be below the ceiling %g", q.Floor.Value, ceiling)
			}
		}
	}
	if m := sp.KAI.GPUMemoryMiB; m != nil && (*m < 1024 || *m > 1<<22) {
		v.fail("spec.kai.gpuMemoryMiB", "%d is not the memory of a GPU in MiB: use 1024 to 4194304 (e.g. 81920 for 80 GiB)", *m)
	}
	if vl := sp.KAI.VLLM; vl != nil {
		v.percent("spec.kai.vllm.gpuMemoryUtilizationBufferPercent", vl.GpuMemoryUtilizationBufferPercent, 0, 90)
	}
	if g := sp.GitOps; g != nil {
		v.percent("spec.gitops.minChangePercent", g.MinChangePercent, 0, 100)
		switch g.Grouping {
		case "", "workload", "namespace", "policy", "cluster":
		default:
			v.fail("spec.gitops.grouping", "%q is not supported: use workload, namespace, policy or cluster", g.Grouping)
		}
		// Both go to the forge as they are: an empty or padded one would be
		// refused there, after the branch is pushed.
		for _, l := range []struct {
			field string
			list  []string
		}{{"spec.gitops.labels", g.Labels}, {"spec.gitops.reviewers", g.Reviewers}} {
			for i, s := range l.list {
				if s == "" || strings.TrimSpace(s) != s {
					v.fail(fmt.Sprintf("%s[%d]", l.field, i), "%q must be a name without surrounding spaces", s)
				}
			}
		}
	}
}

func (v validator) scope(m *Meta, s *Scope) {
	if ns := s.NamespaceSelector; ns != nil {
		if !m.Clustered() {
			v.fail("spec.scope.namespaceSelector", "not allowed on the namespaced %s: it governs only its own namespace", m.Kind)
		}
		switch ns.Operator {
		case "In", "NotIn":
		default:
			v.fail("spec.scope.namespaceSelector.operator", "%q is not supported: use In or NotIn", ns.Operator)
		}
		if len(ns.Values) == 0 {
			v.fail("spec.scope.namespaceSelector.values", "must name at least one namespace, or \"*\" for all")
		}
		for i, val := range ns.Values {
			if _, err := path.Match(val, ""); err != nil || val == "" {
				v.fail(fmt.Sprintf("spec.scope.namespaceSelector.values[%d]", i), "%q is neither a namespace nor a pattern such as team-*", val)
			}
		}
	}
	if ls := s.LabelSelector; ls != nil {
		v.labelSelector("spec.scope.labelSelector", ls)
	}
	if len(s.WorkloadTypes) == 0 {
		v.fail("spec.scope.workloadTypes", "must name at least one workload type, e.g. Deployment")
	}
	for i, t := range s.WorkloadTypes {
		if slices.Contains(workloadTypes, t) {
			continue
		}
		if near, ok := located.Nearest(t, workloadTypes); ok {
			v.fail(fmt.Sprintf("spec.scope.workloadTypes[%d]", i), "unknown workload type %q (did you mean %q?)", t, near)
		} else {
			v.fail(fmt.Sprintf("spec.scope.workloadTypes[%d]", i), "unknown workload type %q (known: %v)", t, workloadTypes)
		}
	}
}

func (v validator) labelSelector(field string, ls *LabelSelector) {
	for i, r := range ls.MatchExpressions {
		f := fmt.Sprintf("%s.matchExpressions[%d]", field, i)
		if r.Key == "" {
			v.fail(f+".key", "missing")
		}
		switch r.Operator {
		case "In", "NotIn":
			if len(r.Values) == 0 {
				v.fail(f+".values", "operator %s needs at least one value", r.Operator)
			}
		case "Exists", "DoesNotExist":
			if len(r.Values) != 0 {
				v.fail(f+".values", "operator %s takes no values", r.Operator)
			}
		default:
			v.fail(f+".operator", "%q is not supported: use In, NotIn, Exists or DoesNotExist", r.Operator)
		}
	}
}

func (v validator) proactive(p *ProactivePolicy) {
	v.meta(&p.Meta)
	v.scope(&p.Meta, &p.Spec.Scope)
	if p.Spec.AutomationStrategyRef.Name == "" {
		v.fail("spec.automationStrategyRef.name", "missing")
	}
	v.minDuration("spec.window", p.Spec.Window, time.Hour)
	v.minDuration("spec.minHistory", p.Spec.MinHistory, time.Hour)
	v.percent("spec.headroomPercent", p.Spec.HeadroomPercent, 0, 500)
	v.percent("spec.computePercentile", p.Spec.ComputePercentile, 50, 100)
	v.percent("spec.memoryConfidenceHeadroomPercent", p.Spec.MemoryConfidenceHeadroomPercent, 0, 500)
	v.minDuration("spec.memoryWindow", p.Spec.MemoryWindow, time.Hour)
	v.minDuration("spec.memoryConfidenceWindow", p.Spec.MemoryConfidenceWindow, time.Hour)
	if w, cw := p.Spec.Window, p.Spec.MemoryConfidenceWindow; cw != nil && cw.Duration > durationOr(w, DefaultProactiveWindow) {
		v.fail("spec.memoryConfidenceWindow", "%s is longer than the window %s", cw, FormatDuration(durationOr(w, DefaultProactiveWindow)))
	}
	v.percent("spec.memoryDailyPeakPercentile", p.Spec.MemoryDailyPeakPercentile, 50, 100)
	// Above even odds a breach is the rule, not the risk.
	v.percent("spec.breachRiskPercent", p.Spec.BreachRiskPercent, 1, 50)
	if w, mw := p.Spec.Window, p.Spec.MemoryWindow; mw != nil && mw.Duration < durationOr(w, DefaultProactiveWindow) {
		v.fail("spec.memoryWindow", "%s is shorter than the window %s", mw, FormatDuration(durationOr(w, DefaultProactiveWindow)))
	}
	if w, h := p.Spec.Window, p.Spec.MinHistory; h != nil && h.Duration > durationOr(w, DefaultProactiveWindow) {
		v.fail("spec.minHistory", "%s is longer than the window %s", h, FormatDuration(durationOr(w, DefaultProactiveWindow)))
	}
}

func (v validator) reactive(p *ReactivePolicy) {
	v.meta(&p.Meta)
	v.contract(p.Spec.Experimental, true)
	v.scope(&p.Meta, &p.Spec.Scope)
	if p.Spec.AutomationStrategyRef.Name == "" {
		v.fail("spec.automationStrategyRef.name", "missing")
	}
	configured := 0
	for _, m := range usage.Metrics {
		mp := p.Spec.Metrics.byMetric()[m]
		if mp == nil {
			continue
		}
		configured++
		f := "spec.metrics." + string(m)
		if mp.Prometheus != nil && mp.Prometheus.Metric == "" {
			v.fail(f+".prometheus.metric", "missing: name the series that carries %s usage, or leave prometheus out to read the preset's", m)
		}
		if pr := mp.Prometheus; pr != nil {
			// These names go into PromQL selectors: anything but a label
			// name would change what a query selects.
			if pr.Metric != "" && !metricNameRE.MatchString(pr.Metric) {
				v.fail(f+".prometheus.metric", "%q is not a Prometheus metric name", pr.Metric)
			}
			for _, l := range []struct{ field, name string }{
				{"namespaceLabel", pr.NamespaceLabel}, {"podLabel", pr.PodLabel}, {"containerLabel", pr.ContainerLabel},
			} {
				if l.name != "" && !labelNameRE.MatchString(l.name) {
					v.fail(f+".prometheus."+l.field, "%q is not a Prometheus label name (letters, digits and _, not starting with a digit)", l.name)
				}
			}
			switch pr.Interpretation {
			case "", FullGPU, CurrentAllocation:
			default:
				v.fail(f+".prometheus.interpretation", "%q is not supported: use %s or %s", pr.Interpretation, FullGPU, CurrentAllocation)
			}
		}
		if u := mp.Upsize; u != nil {
			v.percent(f+".upsize.thresholdPercent", u.ThresholdPercent, 1, 1000)
			v.minDuration(f+".upsize.metricsWindow", u.MetricsWindow, time.Minute)
			v.percent(f+".upsize.headroomPercent", u.HeadroomPercent, 0, 500)
			v.percent(f+".upsize.maxPercent", u.MaxPercent, 101, 1000)
		}
		if s := mp.ScaleBack; s != nil {
			v.percent(f+".scaleBack.thresholdPercent", s.ThresholdPercent, 1, 100)
			v.minDuration(f+".scaleBack.metricsWindow", s.MetricsWindow, time.Minute)
			v.percent(f+".scaleBack.headroomPercent", s.HeadroomPercent, 0, 500)
			// Compare the values in force, defaults included.
			if u := mp.Upsize; u != nil {
				sb, up := deref(s.ThresholdPercent, DefaultScaleBackThresh), deref(u.ThresholdPercent, DefaultUpsizeThreshold)
				if sb >= up {
					v.fail(f+".scaleBack.thresholdPercent", "%d must be below the upsize threshold %d, or the two rules fight", sb, up)
				}
			}
		}
	}
	if configured == 0 {
		v.fail("spec.metrics", "must configure compute, memory or both")
	}
}

func (v validator) consolidation(p *ConsolidationPolicy) {
	v.meta(&p.Meta)
	v.contract(p.Spec.Experimental, true)
	v.labelSelector("spec.nodeSelector", &p.Spec.NodeSelector)
	if len(p.Spec.NodeSelector.MatchLabels) == 0 && len(p.Spec.NodeSelector.MatchExpressions) == 0 {
		v.fail("spec.nodeSelector", "must select the nodes of one pool")
	}
	v.percent("spec.utilizationThresholdPercent", p.Spec.UtilizationThresholdPercent, 1, 100)
	v.minDuration("spec.requeueAfter", p.Spec.RequeueAfter, time.Second)
}

// Prometheus' name rules (the classic ones every server accepts).
var (
	labelNameRE  = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
)
