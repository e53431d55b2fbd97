// Package plan runs the recommender's pipeline once, read-only: policies
// and workloads from a repository checkout, usage from a source, decisions
// from the policy engine, and the edits those decisions make to the
// manifests. It writes nothing; publishing the edits is another step's job.
package plan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// UsageSource answers usage queries: a Prometheus server, a recorded file.
type UsageSource interface {
	Usage(ctx context.Context, q usage.Query) (usage.Result, error)
}

// KAI's names for what the editor writes.
const (
	kaiScheduler  = "kai-scheduler"
	queueLabel    = "kai.scheduler/queue"
	fractionLabel = "gpu-fraction"
)

// Options configures one plan.
type Options struct {
	// Repo is the checkout to read.
	Repo string
	// PolicyPaths narrows where policies are read from (relative to Repo).
	PolicyPaths []string
	// At is the evaluation time.
	At time.Time
	// Source provides usage.
	Source UsageSource
	// DefaultNamespace is the namespace of manifests that name none.
	DefaultNamespace string
	Logger           *slog.Logger
}

// Plan is the outcome of one run.
type Plan struct {
	At time.Time
	// Decisions holds one entry per workload in scope or asking for a GPU,
	// sorted by namespace, kind and name.
	Decisions []Decision
	// Files are the files the decisions edit, sorted by path.
	Files []patcher.File
	// Problems are inputs that were refused: policies, manifests, edits,
	// usage queries. Whatever they touch is left alone.
	Problems []Problem
	// Hidden counts Deployments neither in scope nor asking for a GPU.
	Hidden int
}

// Decision is one workload's decision and where it stands.
type Decision struct {
	policy.Decision
	Workload patcher.Workload
	Policies []policy.Meta
}

// Problem is one refused input, located as precisely as known.
type Problem struct {
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	loc := p.File
	switch {
	case p.Line > 0 && p.Column > 0:
		loc = fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
	case p.Line > 0:
		loc = fmt.Sprintf("%s:%d", p.File, p.Line)
	}
	msg := p.Message
	if p.Field != "" {
		msg = p.Field + ": " + msg
	}
	if loc == "" {
		return msg
	}
	return loc + ": " + msg
}

// Make runs the pipeline once.
func Make(ctx context.Context, opts Options) (*Plan, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Source == nil {
		return nil, errors.New("plan: no usage source")
	}
	ns := cmp.Or(opts.DefaultNamespace, "default")
	p := &Plan{At: opts.At}

	set, err := policy.Load(ctx, opts.Repo, opts.PolicyPaths...)
	if err != nil {
		return nil, err
	}
	for _, e := range set.Errors {
		p.problem(e)
	}
	log.Info("policies loaded", "strategies", len(set.Strategies), "proactive", len(set.Proactive),
		"reactive", len(set.Reactive), "invalid", len(set.Broken))

	inv, err := patcher.Discover(ctx, opts.Repo)
	if err != nil {
		return nil, err
	}
	for _, pr := range inv.Problems {
		p.problem(pr)
	}
	log.Info("workloads discovered", "count", len(inv.Workloads), "unreadable", len(inv.Problems))

	// Decide who governs what, and group the governed workloads by how
	// their usage is read, so that each group is one batched query.
	type pending struct {
		w   patcher.Workload
		g   policy.Governance
		cur policy.Allocation
	}
	var work []pending
	groups := map[string]*usage.Query{}
	var groupKeys []string
	inv = withNamespaces(inv, ns)
	files := map[usage.Ref][]string{}
	for _, w := range inv.Workloads {
		files[w.Ref] = append(files[w.Ref], fmt.Sprintf("%s:%d", w.File, w.Line))
	}
	for _, w := range inv.Workloads {
		g := set.Govern(policy.Target{Ref: w.Ref, Labels: w.Labels})
		cur, bad := allocation(w.GPU)
		if g.Skip != "" && cur.Form == policy.NoGPU && bad == "" {
			p.Hidden++
			continue
		}
		if where := files[w.Ref]; len(where) > 1 {
			// One problem for the lot, at the first definition.
			if where[0] == fmt.Sprintf("%s:%d", w.File, w.Line) {
				p.Problems = append(p.Problems, Problem{File: w.File, Line: w.Line,
					Message: fmt.Sprintf("%s is defined %d times (%s): which one is deployed is not known", w.Ref, len(where), strings.Join(where, ", "))})
			}
			g = policy.Governance{Skip: fmt.Sprintf("left alone: defined %d times, so which one is deployed is not known", len(where))}
		} else if bad != "" {
			// The manifest itself is in doubt: leave it alone, and say so.
			p.Problems = append(p.Problems, Problem{File: w.File, Line: w.Line, Message: bad})
			g = policy.Governance{Skip: "left alone: " + bad}
		}
		work = append(work, pending{w, g, cur})
		if g.Skip != "" || cur.Form == policy.NoGPU || cur.Form == policy.GPUMemory {
			continue
		}
		k := queryKey(g)
		q, ok := groups[k]
		if !ok {
			q = &usage.Query{At: opts.At, Lookback: g.Lookback(), Metrics: map[usage.Metric]usage.Mapping{}, Containers: g.Containers}
			for m, mr := range g.Sources() {
				q.Metrics[m] = mr.Source
			}
			groups[k] = q
			groupKeys = append(groupKeys, k)
		}
		q.Workloads = append(q.Workloads, w.Ref)
	}

	usages := map[usage.Ref]usage.Workload{}
	failed := map[usage.Ref]string{}
	for _, k := range groupKeys {
		q := groups[k]
		res, err := opts.Source.Usage(ctx, *q)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// A usage error must never shrink anything: the workloads of
			// this query get no decision beyond "no change".
			p.problem(fmt.Errorf("usage query for %d workload(s) failed: %w", len(q.Workloads), err))
			for _, r := range q.Workloads {
				failed[r] = err.Error()
			}
			continue
		}
		for _, warn := range res.Warnings {
			log.Warn("usage", "warning", warn)
		}
		for r, u := range res.Workloads {
			usages[r] = u
		}
	}

	var edits []patcher.Edit
	for _, pw := range work {
		d := Decision{Workload: pw.w, Policies: pw.g.Policies}
		if why, bad := failed[pw.w.Ref]; bad {
			d.Decision = policy.Decision{Action: policy.NoChange, Current: pw.cur, Recommended: pw.cur,
				Reason: "no change: usage unavailable: " + why}
		} else {
			d.Decision = policy.Decide(policy.Input{At: opts.At, Current: pw.cur, Governance: pw.g, Usage: usages[pw.w.Ref]})
		}
		if e, ok := editFor(d, pw.g.Strategy); ok {
			edits = append(edits, e)
		}
		p.Decisions = append(p.Decisions, d)
	}
	slices.SortFunc(p.Decisions, func(a, b Decision) int {
		return cmp.Or(cmp.Compare(a.Workload.Ref.Namespace, b.Workload.Ref.Namespace),
			cmp.Compare(a.Workload.Ref.Kind, b.Workload.Ref.Kind), cmp.Compare(a.Workload.Ref.Name, b.Workload.Ref.Name),
			cmp.Compare(a.Workload.File, b.Workload.File))
	})

	if len(edits) > 0 {
		res, err := patcher.Apply(ctx, opts.Repo, inv, edits)
		if err != nil {
			return nil, err
		}
		p.Files = res.Files
		for _, r := range res.Refused {
			p.refuse(r)
		}
		for _, n := range res.Notes {
			p.note(n)
		}
	}
	slices.SortFunc(p.Problems, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Field, b.Field), cmp.Compare(a.Message, b.Message))
	})
	return p, nil
}

// withNamespaces returns the inventory with the default namespace filled
// in, so that the editor finds workloads by the refs the decisions use.
func withNamespaces(inv *patcher.Inventory, ns string) *patcher.Inventory {
	c := *inv
	c.Workloads = slices.Clone(inv.Workloads)
	for i := range c.Workloads {
		if c.Workloads[i].Ref.Namespace == "" {
			c.Workloads[i].Ref.Namespace = ns
		}
	}
	return &c
}

// refuse records a refused edit: nothing changes for its workload, whose
// decision says what it wanted and why it could not be written.
func (p *Plan) refuse(r patcher.Refusal) {
	for i := range p.Decisions {
		d := &p.Decisions[i]
		if d.Workload.Ref == r.Workload && d.Workload.File == r.File {
			d.Reason = fmt.Sprintf("no change: the edit was refused (%v); it wanted %s → %s: %s", r.Err, d.Current, d.Recommended, d.Reason)
			d.Action, d.Recommended, d.Urgent = policy.NoChange, d.Current, false
		}
	}
	p.Problems = append(p.Problems, Problem{File: r.File, Message: fmt.Sprintf("edit of %s refused: %v", r.Workload, r.Err)})
}

// note adds to a decision what its edit left alone on purpose, e.g. a vLLM
// flag that --kv-cache-memory-bytes makes moot: the reviewer must know.
func (p *Plan) note(n patcher.Note) {
	for i := range p.Decisions {
		d := &p.Decisions[i]
		if d.Workload.Ref == n.Workload && d.Workload.File == n.File {
			d.Reason += fmt.Sprintf("; left alone: %s: %v", n.Field, n.Err)
		}
	}
}

func (p *Plan) problem(err error) {
	var fe *policy.FieldError
	var pr patcher.Problem
	switch {
	case errors.As(err, &fe):
		p.Problems = append(p.Problems, Problem{File: fe.File, Line: fe.Line, Column: fe.Column, Field: fe.Field, Message: fe.Msg})
	case errors.As(err, &pr):
		p.Problems = append(p.Problems, Problem{File: pr.File, Line: pr.Line, Message: pr.Err.Error()})
	default:
		p.Problems = append(p.Problems, Problem{Message: err.Error()})
	}
}

// allocation reads a workload's GPU request the way KAI does. bad says why
// the request cannot be worked with, when it cannot.
func allocation(g patcher.GPU) (a policy.Allocation, bad string) {
	switch {
	case g.Err != nil:
		return policy.Allocation{Form: policy.NoGPU}, fmt.Sprintf("its GPU request cannot be edited: %v", g.Err)
	case len(g.WholeContainers) > 1:
		return policy.Allocation{Form: policy.WholeGPUs, GPUs: float64(g.Whole)},
			fmt.Sprintf("nvidia.com/gpu is requested by several containers (%s): a fraction reaches one only", strings.Join(g.WholeContainers, ", "))
	case g.FractionText != "" && g.Fraction == 0:
		return policy.Allocation{Form: policy.Fraction}, fmt.Sprintf("gpu-fraction %q is not a fraction KAI accepts (strictly between 0 and 1)", g.FractionText)
	case g.FractionErr != nil:
		// An annotation KAI would not read as written: taking it for no
		// request would hide it.
		return policy.Allocation{Form: policy.NoGPU}, g.FractionErr.Error()
	case g.MemoryMiB > 0:
		return policy.Allocation{Form: policy.GPUMemory}, ""
	case g.Fraction > 0 && g.NumDevices > 1:
		// The request is N × the fraction; deciding on the fraction alone
		// would misread usage by a factor of N.
		return policy.Allocation{Form: policy.Fraction, GPUs: g.Fraction},
			fmt.Sprintf("gpu-fraction-num-devices %d: fractions over several devices are not supported yet", g.NumDevices)
	case g.Fraction > 0:
		return policy.Allocation{Form: policy.Fraction, GPUs: g.Fraction}, ""
	case g.Whole > 0:
		return policy.Allocation{Form: policy.WholeGPUs, GPUs: float64(g.Whole)}, ""
	}
	return policy.Allocation{Form: policy.NoGPU}, ""
}

// queryKey identifies how a governance reads usage: workloads with equal
// keys share one query.
func queryKey(g policy.Governance) string {
	var b strings.Builder
	for _, m := range usage.Metrics {
		if mr := g.Sources()[m]; mr != nil {
			fmt.Fprintf(&b, "%s=%+v;", m, mr.Source)
		}
	}
	fmt.Fprintf(&b, "containers=%q;lookback=%s", g.Containers, g.Lookback())
	return b.String()
}

// editFor turns a decision into the edit of its workload's manifest.
func editFor(d Decision, st *policy.StrategyRules) (patcher.Edit, bool) {
	if d.Action != policy.Upsize && d.Action != policy.ScaleBack {
		return patcher.Edit{}, false
	}
	w, rec := d.Workload, d.Recommended
	e := patcher.Edit{Workload: w.Ref, File: w.File, Reason: d.Reason}
	switch rec.Form {
	case policy.Fraction:
		e.Ops = append(e.Ops, patcher.SetGPUFraction(fmt.Sprintf("%.2f", rec.GPUs)))
		if d.Current.Form == policy.WholeGPUs {
			e.Ops = append(e.Ops, patcher.RemoveWholeGPUs())
		}
		if st.MoveToKAI && w.SchedulerName != kaiScheduler {
			e.Ops = append(e.Ops, patcher.SetSchedulerName(kaiScheduler))
		}
		switch {
		case w.Queue == "":
			e.Ops = append(e.Ops, patcher.SetPodLabel(queueLabel, st.Queue))
		case st.SetQueueWhenSpecified && w.Queue != st.Queue:
			// KAI reads the workload's own label before the template's:
			// change it wherever it is set.
			if _, ok := w.Labels[queueLabel]; ok {
				e.Ops = append(e.Ops, patcher.SetWorkloadLabel(queueLabel, st.Queue))
			}
			if _, ok := w.PodLabels[queueLabel]; ok {
				e.Ops = append(e.Ops, patcher.SetPodLabel(queueLabel, st.Queue))
			}
		}
	case policy.WholeGPUs:
		if d.Current.Form == policy.Fraction {
			e.Ops = append(e.Ops, patcher.RemovePodAnnotation(fractionLabel))
		}
		e.Ops = append(e.Ops, patcher.SetWholeGPUs(int64(rec.GPUs)))
	}
	if v, ok := vllmUtilization(d, st); ok {
		e.Ops = append(e.Ops, patcher.SetVLLMMemoryUtilization(v))
	}
	return e, true
}

// vllmUtilization is the --gpu-memory-utilization that leaves the
// strategy's buffer of the new allocation unused (DESIGN §5). vLLM measures
// against the memory it sees: the whole GPU without HAMi-core, its share
// with it.
func vllmUtilization(d Decision, st *policy.StrategyRules) (string, bool) {
	// Only the container the GPU goes to is sized by the fraction.
	gpu := d.Workload.GPU.Container
	if st.VLLMBufferPercent < 0 || !slices.ContainsFunc(d.Workload.Containers, func(c patcher.Container) bool { return c.VLLM && c.Name == gpu }) {
		return "", false
	}
	keep := 1 - float64(st.VLLMBufferPercent)/100
	share := d.Recommended.GPUs
	if st.HAMiCore || d.Recommended.Form == policy.WholeGPUs {
		share = 1
	}
	// Round down: a utilization above the share would let vLLM take memory
	// its neighbours were promised.
	return fmt.Sprintf("%.2f", math.Floor(share*keep*100+1e-9)/100), true
}
