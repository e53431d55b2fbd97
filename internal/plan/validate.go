package plan

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// Validation is what a repository's policies say without any usage: the
// problems plan would report before reading a metric, which workloads each
// policy selects, and who governs each workload. It is the check a GitOps
// repository runs on a pull request that edits its policies.
type Validation struct {
	Policies  []PolicySummary
	Workloads []WorkloadSummary
	// Problems are the refused inputs, as plan reports them.
	Problems []Problem
	// Hidden counts workloads no policy is concerned with that ask for no
	// GPU: listing every web server of a repository would bury the rest.
	Hidden int
}

// PolicySummary is one policy document and the workloads its scope selects.
type PolicySummary struct {
	policy.Meta
	// Selects are the workloads its scope selects, whether or not it ends
	// up governing them (a more specific policy may win).
	Selects []usage.Ref
	// Note says what the policy is when it selects no workload by itself:
	// a strategy, a consolidation policy, an invalid document.
	Note string
}

// WorkloadSummary is one workload and what governs it, or why nothing does.
type WorkloadSummary struct {
	Ref  usage.Ref
	File string
	Line int
	// Policies govern it; empty when Skip says why nothing does.
	Policies []policy.Meta
	Skip     engine.Cause
	Why      string
}

// Validate reads the checkout once, as Govern does, and summarises its
// policies. No usage is read, so no time and no source are needed.
func Validate(ctx context.Context, opts Options) (*Validation, error) {
	p, set, err := governSet(ctx, opts)
	if err != nil {
		return nil, err
	}
	v := &Validation{}
	shown := map[string]bool{}
	for _, pw := range p.work {
		shown[pw.w.Where()+" "+pw.w.Ref.String()] = true
		v.Workloads = append(v.Workloads, WorkloadSummary{Ref: pw.w.Ref, File: pw.w.File, Line: pw.w.Line,
			Policies: pw.g.Policies, Skip: pw.g.Skip, Why: pw.g.Why})
	}
	for _, w := range p.mapped {
		if shown[w.Where()+" "+w.Ref.String()] {
			continue
		}
		// Plan hides a workload without a GPU whatever the cause; a
		// policy that selects it, or would if it were valid, is what a
		// reviewer of the policies wants to see.
		g := set.Govern(policy.Target{Ref: w.Ref, Labels: w.Labels})
		if g.Skip == engine.CauseOutOfScope {
			v.Hidden++
			continue
		}
		if g.Skip == engine.CausePolicyConflict {
			p.Problems = append(p.Problems, Problem{File: w.File, Line: w.Line, Message: fmt.Sprintf("%s is left alone: %s", w.Ref, g.Why),
				Cause: engine.CausePolicyConflict})
		}
		v.Workloads = append(v.Workloads, WorkloadSummary{Ref: w.Ref, File: w.File, Line: w.Line,
			Policies: g.Policies, Skip: g.Skip, Why: g.Why})
	}
	slices.SortFunc(v.Workloads, func(a, b WorkloadSummary) int {
		return cmp.Or(compareRefs(a.Ref, b.Ref), cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	p.sortProblems()
	v.Problems = p.Problems

	v.Policies = policySummaries(set, p.mapped, p.inv, p.clusters, cmp.Or(opts.DefaultNamespace, "default"))
	return v, nil
}

// policySummaries lists every policy document with the workloads (and the
// objects of kinds not sized, which a scope may name) its scope selects.
func policySummaries(set *policy.Set, ws []patcher.Workload, inv *patcher.Inventory, m *policy.ClusterMap, ns string) []PolicySummary {
	var out []PolicySummary
	targets := make([]policy.Target, 0, len(ws)+len(inv.Unsupported))
	for _, w := range ws {
		targets = append(targets, policy.Target{Ref: w.Ref, Labels: w.Labels})
	}
	for _, u := range inv.Unsupported {
		u.Ref.Namespace = cmp.Or(u.Ref.Namespace, ns)
		if m != nil {
			u.Ref.Cluster = strings.Join(m.Clusters(u.File), usage.ClusterSep)
		}
		targets = append(targets, policy.Target{Ref: u.Ref, Labels: u.Labels})
	}
	if m := set.ClusterMap; m != nil {
		var cs []string
		for _, c := range m.Spec.Clusters {
			cs = append(cs, fmt.Sprintf("%s (%s=%q: %s)", c.Name, m.Spec.Label, c.LabelValue, strings.Join(c.Paths, ", ")))
		}
		out = append(out, PolicySummary{Meta: m.Meta, Note: "the cluster map: " + strings.Join(cs, "; ")})
	}
	selects := func(m policy.Meta, s *policy.Scope) []usage.Ref {
		var refs []usage.Ref
		for _, t := range targets {
			if s.Selects(m, t) {
				refs = append(refs, t.Ref)
			}
		}
		// A workload defined twice is one row: sorted, its copies are
		// side by side (a search of the rows so far was quadratic).
		slices.SortFunc(refs, compareRefs)
		return slices.Compact(refs)
	}
	for _, st := range set.Strategies {
		out = append(out, PolicySummary{Meta: st.Meta, Note: "a strategy: it governs through the policies that refer to it"})
	}
	for _, pp := range set.Proactive {
		out = append(out, PolicySummary{Meta: pp.Meta, Selects: selects(pp.Meta, &pp.Spec.Scope)})
	}
	for _, rp := range set.Reactive {
		out = append(out, PolicySummary{Meta: rp.Meta, Selects: selects(rp.Meta, &rp.Spec.Scope)})
	}
	for _, cp := range set.Consolidation {
		out = append(out, PolicySummary{Meta: cp.Meta, Note: "a consolidation policy: it selects nodes, not workloads"})
	}
	for _, b := range set.Broken {
		if b.Kind == "" {
			// A file that could not be read names no policy; its problem
			// says where it is.
			continue
		}
		out = append(out, PolicySummary{Meta: b.Meta,
			Note: "invalid: nothing it could govern is changed (see the problems)"})
	}
	slices.SortFunc(out, func(a, b PolicySummary) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// governedBy says who governs a workload, or why nothing does, in words.
func (w WorkloadSummary) governedBy() string {
	if w.Skip != "" {
		return fmt.Sprintf("none (%s): %s", w.Skip, w.Why)
	}
	names := make([]string, len(w.Policies))
	for i, m := range w.Policies {
		names[i] = m.String()
	}
	return strings.Join(names, ", ")
}

// WriteTable renders the validation for people: the problems first, as
// they are what fails the check, then the policies and the workloads.
func (v *Validation) WriteTable(w io.Writer) error {
	if len(v.Problems) > 0 {
		fmt.Fprintf(w, "%d problem(s); whatever they touch is left alone:\n", len(v.Problems))
		for _, pr := range v.Problems {
			fmt.Fprintf(w, "  %s\n", printable(pr.String(), ""))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%d policy document(s):\n", len(v.Policies))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tFILE\tSELECTS")
	for _, p := range v.Policies {
		sel := p.Note
		if sel == "" {
			refs := make([]string, len(p.Selects))
			for i, r := range p.Selects {
				refs[i] = r.String()
			}
			sel = cmp.Or(strings.Join(refs, ", "), "no workload")
		}
		fmt.Fprintf(tw, "%s\t%s:%d\t%s\n", printable(p.Meta.String(), ""), printable(p.File, ""), p.Line, printable(sel, ""))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d workload(s):\n", len(v.Workloads))
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tFILE\tGOVERNED BY")
	for _, wl := range v.Workloads {
		fmt.Fprintf(tw, "%s\t%s:%d\t%s\n", printable(wl.Ref.String(), ""), printable(wl.File, ""), wl.Line, printable(wl.governedBy(), ""))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if v.Hidden > 0 {
		fmt.Fprintf(w, "(%d workload(s) without a GPU request and out of scope not shown)\n", v.Hidden)
	}
	return nil
}

// jsonValidation is the machine-readable validation; its field names are
// a contract.
type jsonValidation struct {
	Valid     bool           `json:"valid"`
	Errors    []Problem      `json:"errors"`
	Policies  []jsonPolicy   `json:"policies"`
	Workloads []jsonWorkload `json:"workloads"`
	Hidden    int            `json:"hidden"`
}

type jsonPolicy struct {
	Kind      string    `json:"kind"`
	Namespace string    `json:"namespace,omitempty"`
	Name      string    `json:"name"`
	File      string    `json:"file"`
	Line      int       `json:"line"`
	Selects   []jsonRef `json:"selects"`
	Note      string    `json:"note,omitempty"`
}

type jsonRef struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
}

type jsonWorkload struct {
	jsonRef
	File     string       `json:"file"`
	Line     int          `json:"line"`
	Policies []string     `json:"policies"`
	Cause    engine.Cause `json:"cause,omitempty"`
	Why      string       `json:"why,omitempty"`
}

// WriteJSON renders the validation for machines. Equal validations render
// to equal bytes.
func (v *Validation) WriteJSON(w io.Writer) error {
	out := jsonValidation{Valid: len(v.Problems) == 0, Errors: append([]Problem{}, v.Problems...),
		Policies: []jsonPolicy{}, Workloads: []jsonWorkload{}, Hidden: v.Hidden}
	for _, p := range v.Policies {
		jp := jsonPolicy{Kind: p.Kind, Namespace: p.Namespace, Name: p.Name, File: p.File, Line: p.Line, Selects: []jsonRef{}, Note: p.Note}
		for _, r := range p.Selects {
			jp.Selects = append(jp.Selects, jsonRef{Namespace: r.Namespace, Kind: r.Kind, Name: r.Name})
		}
		out.Policies = append(out.Policies, jp)
	}
	for _, wl := range v.Workloads {
		jw := jsonWorkload{jsonRef: jsonRef{Namespace: wl.Ref.Namespace, Kind: wl.Ref.Kind, Name: wl.Ref.Name},
			File: wl.File, Line: wl.Line, Policies: []string{}, Cause: wl.Skip, Why: wl.Why}
		for _, m := range wl.Policies {
			jw.Policies = append(jw.Policies, m.String())
		}
		out.Workloads = append(out.Workloads, jw)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}
