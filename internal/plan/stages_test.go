package plan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/engine"
	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// TestStagesMakeThePlan: running the stages one by one gives the plan Make
// gives, byte for byte.
func TestStagesMakeThePlan(t *testing.T) {
	ctx := context.Background()
	opts := plan.Options{Repo: repo, At: at, Source: recorded(t)}
	whole, err := plan.Make(ctx, opts)
	require.NoError(t, err)

	p, err := plan.Govern(ctx, opts)
	require.NoError(t, err)
	require.Len(t, p.Queries, 1, "the starter policies read usage one way")
	require.Empty(t, p.Decisions, "nothing is decided before usage is fetched")
	require.NoError(t, p.Fetch(ctx, opts.Source))
	p.Decide()
	require.NotEmpty(t, p.Decisions)
	require.Empty(t, p.Files, "nothing is edited before Preview")
	require.NoError(t, p.Preview(ctx))

	var a, b bytes.Buffer
	require.NoError(t, whole.WriteJSON(&a))
	require.NoError(t, p.WriteJSON(&b))
	require.Equal(t, a.String(), b.String())
}

// TestChangeSets: edits come grouped for publishing, each group applied
// alone on a fresh copy of the checkout, and a group's files are exactly
// what the plan previews for its workloads.
func TestChangeSets(t *testing.T) {
	ctx := context.Background()
	p, err := plan.Make(ctx, plan.Options{Repo: repo, At: at, Source: recorded(t)})
	require.NoError(t, err)
	preview := map[string]string{}
	for _, f := range p.Files {
		preview[f.Path] = string(f.New)
	}

	tests := []struct {
		name string
		by   plan.Grouping
		keys []string
	}{
		{name: "one per workload by default", by: "", keys: []string{
			"inference/Deployment/asr-whisper", "inference/Deployment/chat", "inference/Deployment/summarize", "inference/Deployment/translate"}},
		{name: "by namespace", by: plan.ByNamespace, keys: []string{"inference"}},
		{name: "by policy", by: plan.ByPolicy, keys: []string{
			"ClusterProactivePolicy kai-gpu-sharing-baseline + ClusterGpuReactivePolicy kai-gpu-sharing-reactive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sets, err := p.ChangeSets(tt.by)
			require.NoError(t, err)
			var keys []string
			edits := 0
			for _, cs := range sets {
				keys = append(keys, cs.Key)
				require.Len(t, cs.Edits, len(cs.Decisions))
				edits += len(cs.Edits)
				for _, d := range cs.Decisions {
					require.True(t, d.Action.Changes(), "%s: only changes are published", d.Workload.Ref)
				}
				// A fresh copy of the base for each change set: applying one
				// never depends on another having been applied.
				dir := quickstartCopy(t, nil)
				res, err := cs.Apply(ctx, dir, p.Inventory())
				require.NoError(t, err)
				require.Empty(t, res.Refused)
				require.Len(t, res.Files, len(cs.Edits), "each workload of the quickstart has a file of its own")
				for _, f := range res.Files {
					require.Equal(t, preview[f.Path], string(f.New), f.Path)
				}
			}
			require.Equal(t, tt.keys, keys)
			require.Equal(t, 4, edits, "two upsizes and two scale-backs")
		})
	}
	_, err = p.ChangeSets("team")
	require.ErrorContains(t, err, `unknown grouping "team"`)
}

// TestPolicyConflictIsAProblem: two cluster policies of one kind claiming
// the same workloads leave them alone, and the run says so (exit 3), not
// silently.
func TestPolicyConflictIsAProblem(t *testing.T) {
	dir := quickstartCopy(t, nil)
	pf := filepath.Join(dir, "policies/kai-gpu-sharing.yaml")
	b, err := os.ReadFile(pf)
	require.NoError(t, err)
	doc := string(b)
	start := strings.Index(doc, "apiVersion: rightsizing.kubex.ai/v1alpha1\nkind: ClusterProactivePolicy")
	end := strings.Index(doc, "kind: ClusterGpuReactivePolicy")
	require.True(t, start >= 0 && end > start)
	second := strings.Replace(doc[start:end], "name: kai-gpu-sharing-baseline", "name: second-baseline", 1)
	second = strings.TrimSuffix(second, "apiVersion: rightsizing.kubex.ai/v1alpha1\n")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "policies/second.yaml"), []byte(second), 0o644))

	p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: at, Source: recorded(t)})
	require.NoError(t, err)
	require.Empty(t, p.Files)
	chat := decisionOf(t, p, "chat")
	require.Equal(t, engine.Skipped, chat.Action)
	require.Equal(t, engine.CausePolicyConflict, chat.Cause)
	require.Equal(t, "left alone: ClusterProactivePolicy kai-gpu-sharing-baseline and ClusterProactivePolicy second-baseline both select it", chat.Reason())
	require.NotEmpty(t, p.Problems)
	found := false
	for _, pr := range p.Problems {
		if pr.File == "apps/chat/deployment.yaml" && strings.Contains(pr.Message, "both select it") {
			found = true
		}
	}
	require.True(t, found, "the conflict is a problem at the workload: %v", p.Problems)
}

// TestJSONCarriesCauseAndEvidence: every decision of the JSON plan says
// why in structure, not only in prose.
func TestJSONCarriesCauseAndEvidence(t *testing.T) {
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t)})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, p.WriteJSON(&buf))
	var out struct {
		Decisions []struct {
			Name     string
			Action   string
			Cause    string
			Evidence struct {
				Allocation float64
				Proposal   *struct{ Rule, Metric string }
				Upsizes    []struct{ Metric, Pod, Window string }
				Shortfall  *struct{ Kind string }
			}
		}
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &out))
	causes := map[string]string{}
	for _, d := range out.Decisions {
		causes[d.Name] = d.Cause
		if d.Action == "upsize" || d.Action == "scaleBack" {
			require.Empty(t, d.Cause, d.Name)
			require.NotNil(t, d.Evidence.Proposal, d.Name)
		} else {
			require.NotEmpty(t, d.Cause, d.Name)
		}
	}
	require.Equal(t, map[string]string{"asr-whisper": "", "chat": "", "embed": "data-incomplete", "ocr": "out-of-scope",
		"rerank": "too-young", "summarize": "", "translate": ""}, causes)
	for _, d := range out.Decisions {
		if d.Name == "chat" {
			require.Equal(t, "reactive upsize", d.Evidence.Proposal.Rule)
			require.Equal(t, "compute", d.Evidence.Proposal.Metric)
			require.Len(t, d.Evidence.Upsizes, 1)
			require.Equal(t, "2m", d.Evidence.Upsizes[0].Window)
			require.NotEmpty(t, d.Evidence.Upsizes[0].Pod, "the pod that peaked is named")
		}
		if d.Name == "embed" {
			require.Equal(t, "gap", d.Evidence.Shortfall.Kind)
		}
	}
}

// TestGovernReadsTheCheckoutOnce: a file the reader refuses is one
// problem, not one from policy loading and another from discovery; a
// FIFO does not hang the run; a symlinked checkout plans like the real one.
func TestGovernReadsTheCheckoutOnce(t *testing.T) {
	dir := quickstartCopy(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apps/huge.yaml"), bytes.Repeat([]byte("# pad\n"), 2<<20), 0o644))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "apps/pipe.yaml"), 0o644))
	link := filepath.Join(t.TempDir(), "repo")
	require.NoError(t, os.Symlink(dir, link))

	p, err := plan.Make(context.Background(), plan.Options{Repo: link, At: at, Source: recorded(t)})
	require.NoError(t, err)
	var files []string
	for _, pr := range p.Problems {
		files = append(files, pr.File)
	}
	require.Equal(t, []string{"apps/huge.yaml", "apps/pipe.yaml"}, files, "%v", p.Problems)
	// The refused files may hold policies: what those could govern (every
	// workload) is left alone, and nothing is edited.
	require.Equal(t, engine.CausePolicyInvalid, decisionOf(t, p, "chat").Cause)
	require.Empty(t, p.Files)

	// Without them, the symlinked checkout plans like the quickstart.
	require.NoError(t, os.Remove(filepath.Join(dir, "apps/huge.yaml")))
	require.NoError(t, os.Remove(filepath.Join(dir, "apps/pipe.yaml")))
	p, err = plan.Make(context.Background(), plan.Options{Repo: link, At: at, Source: recorded(t)})
	require.NoError(t, err)
	require.Empty(t, p.Problems)
	require.Equal(t, engine.Upsize, decisionOf(t, p, "chat").Action)
}

// TestReaderProblemsPerFile: two files refused for the same reason are
// each reported once, at their own path.
func TestReaderProblemsPerFile(t *testing.T) {
	dir := quickstartCopy(t, nil)
	outside := filepath.Join(t.TempDir(), "x.yaml")
	require.NoError(t, os.WriteFile(outside, []byte("a: 1\n"), 0o644))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "apps/a.yaml")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "apps/b.yaml")))
	p, err := plan.Govern(context.Background(), plan.Options{Repo: dir, At: at})
	require.NoError(t, err)
	var files []string
	for _, pr := range p.Problems {
		files = append(files, pr.File)
		require.Contains(t, pr.Message, "every workload a policy in it could govern is left alone")
	}
	require.Equal(t, []string{"apps/a.yaml", "apps/b.yaml"}, files, "%v", p.Problems)
}

// unattributing answers from a real recording, and says, as metrics.Set
// does for a pod whose owner cannot be established, that such a pod may
// be each of refs'.
type unattributing struct {
	src  plan.UsageSource
	refs []usage.Ref
	why  string
}

func (u unattributing) Usage(ctx context.Context, q usage.Query) (usage.Result, error) {
	res, err := u.src.Usage(ctx, q)
	if err != nil {
		return res, err
	}
	res.Unattributed = map[usage.Ref][]string{}
	for _, r := range u.refs {
		res.Unattributed[r] = []string{u.why}
	}
	return res, nil
}

// TestUnattributedPodInTheDecision: a pod that counts for no workload is
// said in the decision of each workload it may belong to — its evidence
// in the JSON, its reason in the table — and a scale-back waits for it;
// an upsize still goes ahead.
func TestUnattributedPodInTheDecision(t *testing.T) {
	const why = "pod inference/chat-x counts for no workload: its name fits Deployments chat, summarize alike"
	ref := func(name string) usage.Ref { return usage.Ref{Namespace: "inference", Kind: "Deployment", Name: name} }
	before, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t)})
	require.NoError(t, err)
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at,
		Source: unattributing{src: recorded(t), refs: []usage.Ref{ref("chat"), ref("summarize")}, why: why}})
	require.NoError(t, err)
	actions := map[string]engine.Action{}
	for _, d := range before.Decisions {
		actions[d.Workload.Ref.Name] = d.Action
	}
	require.Equal(t, engine.Upsize, actions["chat"])
	require.Equal(t, engine.ScaleBack, actions["summarize"])
	for _, d := range p.Decisions {
		switch d.Workload.Ref.Name {
		case "chat":
			require.Equal(t, engine.Upsize, d.Action)
			require.Equal(t, []string{why}, d.Evidence.Unattributed)
			require.Contains(t, d.Reason(), "; not counted: "+why)
		case "summarize":
			require.Equal(t, engine.NoChange, d.Action)
			require.Equal(t, engine.CauseDataIncomplete, d.Cause)
			require.Equal(t, "no change: incomplete data: "+why+", and a scale-back needs every pod of the workload", d.Reason())
		default:
			require.Empty(t, d.Evidence.Unattributed, d.Workload.Ref.Name)
		}
	}
	var buf bytes.Buffer
	require.NoError(t, p.WriteJSON(&buf))
	var out struct {
		Decisions []struct {
			Name     string
			Evidence struct {
				Unattributed []string
				Shortfall    *struct{ Kind, Why string }
			}
		}
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &out))
	for _, d := range out.Decisions {
		if d.Name == "summarize" {
			require.Equal(t, []string{why}, d.Evidence.Unattributed)
			require.Equal(t, "unattributed", d.Evidence.Shortfall.Kind)
			require.Equal(t, why, d.Evidence.Shortfall.Why)
		}
	}
	var table strings.Builder
	require.NoError(t, p.WriteTable(&table, 0))
	require.Contains(t, table.String(), "not counted: "+why)
}

// TestJSONNumbersAreRounded: arithmetic noise in the last bits
// (0.19640000000000002) never reaches the JSON plan, and no amount moves
// by more than that noise.
func TestJSONNumbersAreRounded(t *testing.T) {
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t)})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, p.WriteJSON(&buf))
	long := regexp.MustCompile(`[0-9]\.[0-9]{13,}`)
	require.Empty(t, long.FindAllString(buf.String(), -1), "numbers with float noise")

	var out struct {
		Decisions []struct {
			Name     string
			Evidence struct {
				Upsizes []struct{ Value, Typical, Target float64 }
			}
		}
	}
	require.NoError(t, json.Unmarshal(buf.Bytes(), &out))
	checked := 0
	for _, d := range out.Decisions {
		for i, r := range d.Evidence.Upsizes {
			want := decisionOf(t, p, d.Name).Evidence.Upsizes[i]
			require.InDelta(t, want.Value, r.Value, 1e-12, d.Name)
			require.InDelta(t, want.Typical, r.Typical, 1e-12, d.Name)
			require.InDelta(t, want.Target, r.Target, 1e-12, d.Name)
			checked++
		}
	}
	require.NotZero(t, checked, "some decision has an upsize reading")
}

// TestDecisionsReleaseTheirSamples: once decided, a workload's usage is
// kept as its chart and its pods' digests, not as samples, so that a run
// of thousands of workloads does not hold every sample until its pull
// requests are written.
func TestDecisionsReleaseTheirSamples(t *testing.T) {
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t)})
	require.NoError(t, err)
	pods := 0
	for _, d := range p.Decisions {
		require.True(t, d.Usage.Released(), d.Workload.Ref.String())
		for _, pod := range d.Usage.Pods {
			require.Nil(t, pod.Series, "%s: pod %s", d.Workload.Ref, pod.Name)
			pods++
		}
	}
	require.NotZero(t, pods, "the fixture's workloads have pods")
}

// TestDropUsageKeepsThePlan: a plan that drops its samples once decided
// holds none, and prints and writes the same plan as one that keeps
// them: table, JSON, markdown, summary, the files and the change sets.
func TestDropUsageKeepsThePlan(t *testing.T) {
	var outs [2]bytes.Buffer
	for i, drop := range []bool{false, true} {
		p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t), DropUsage: drop})
		require.NoError(t, err)
		pods := 0
		for _, d := range p.Decisions {
			pods += len(d.Usage.Pods)
		}
		if drop {
			require.Zero(t, pods, "samples kept with DropUsage")
		} else {
			require.NotZero(t, pods, "the fixture's workloads have pods")
		}
		b := &outs[i]
		require.NoError(t, p.WriteJSON(b))
		require.NoError(t, p.WriteMarkdown(b))
		require.NoError(t, p.WriteTable(b, 200))
		fmt.Fprintln(b, p.Summary(), p.Unselected(), len(p.Problems))
		for _, f := range p.Files {
			fmt.Fprintf(b, "%s %d %q\n", f.Path, len(f.Changes), f.New)
		}
		sets, err := p.ChangeSets("")
		require.NoError(t, err)
		for _, cs := range sets {
			fmt.Fprintln(b, cs.Key, len(cs.Decisions), len(cs.Edits))
		}
	}
	require.NotEmpty(t, outs[0].String())
	require.Equal(t, outs[0].String(), outs[1].String())
}
