package patcher_test

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*/expected from the current output")

func dep(ns, name string) usage.Ref { return usage.Ref{Namespace: ns, Kind: "Deployment", Name: name} }

func isvc(name string) usage.Ref {
	return usage.Ref{Namespace: "inference", Kind: "InferenceService", Name: name}
}

func rollout(name string) usage.Ref {
	return usage.Ref{Namespace: "inference", Kind: "Rollout", Name: name}
}

func dgd(name string) usage.Ref {
	return usage.Ref{Namespace: "inference", Kind: "DynamoGraphDeployment", Name: name}
}

// goldenCase is one directory testdata/golden/<name>: original/ is a repo
// checkout, expected/ holds only the files the edits change.
type goldenCase struct {
	name string
	// ops are applied to every workload Discover finds, unless edits is set.
	ops   []workload.Op
	edits []patcher.Edit
	// inventory replaces Discover: for files that Discover rejects but
	// that an older inventory may still point at.
	inventory *patcher.Inventory
	refused   []error // one per refusal, in order, matched with errors.Is
	notes     []error
	problems  []error
}

var (
	fractionAndVLLM = []workload.Op{patcher.SetGPUFraction("0.37"), patcher.SetVLLMMemoryUtilization("0.33")}
	// wholeToFraction: KAI refuses a fraction next to nvidia.com/gpu.
	wholeToFraction = append([]workload.Op{patcher.RemoveWholeGPUs()}, fractionAndVLLM...)
	toKAI           = []workload.Op{
		patcher.RemoveWholeGPUs(),
		patcher.SetGPUFraction("0.5"),
		patcher.SetSchedulerName("kai-scheduler"),
		patcher.SetPodLabel("kai.scheduler/queue", "default-queue"),
		patcher.SetVLLMMemoryUtilization("0.45"),
	}
)

func goldenCases() []goldenCase {
	return []goldenCase{
		{name: "comments", ops: fractionAndVLLM},
		{name: "indent4", ops: wholeToFraction},
		{name: "sequences-mixed", ops: fractionAndVLLM},
		{name: "flow", ops: fractionAndVLLM},
		{name: "crlf", ops: wholeToFraction},
		{name: "bom", ops: fractionAndVLLM},
		{name: "no-final-newline", ops: fractionAndVLLM},
		{name: "no-final-newline-delete", ops: toKAI},
		{name: "trailing-whitespace", ops: fractionAndVLLM},
		{name: "header-comment", ops: fractionAndVLLM},
		{name: "multi-doc", ops: fractionAndVLLM},
		{name: "block-literal", ops: fractionAndVLLM},
		{name: "block-folded", ops: fractionAndVLLM},
		{name: "sh-c-strings", ops: fractionAndVLLM},
		{name: "kai-migration", ops: toKAI},
		{name: "refuse-several-gpu-containers", ops: toKAI, refused: []error{workload.ErrSeveralGPUContainers}},
		// The fraction goes to the container that held the GPU, by name
		// when it is not the first; the vLLM flag of that container only.
		{name: "gpu-container-name", ops: toKAI, notes: []error{workload.ErrNotGPUContainer}},
		{name: "metadata-missing", ops: []workload.Op{patcher.SetGPUFraction("0.2"), patcher.SetPodLabel("kai.scheduler/queue", "default-queue")}},
		{name: "annotations-shapes", ops: []workload.Op{patcher.SetGPUFraction("0.2")}},
		{name: "vllm-forms", ops: fractionAndVLLM, notes: []error{workload.ErrKVCacheBytes}},
		{name: "remove-and-whole", edits: []patcher.Edit{
			{Workload: dep("", "to-fraction"), Reason: "gpu-memory to gpu-fraction", Ops: []workload.Op{
				patcher.RemovePodAnnotation("gpu-memory"), patcher.SetGPUFraction("0.25"),
			}},
			{Workload: dep("", "to-whole"), Reason: "needs a whole GPU", Ops: []workload.Op{
				patcher.SetWholeGPUs(1), patcher.RemovePodAnnotation("gpu-fraction"), patcher.RemovePodAnnotation("gpu-fraction-container-name"),
			}},
		}},
		{name: "flow-multi-line", ops: fractionAndVLLM},
		{name: "flow-delete", ops: []workload.Op{patcher.RemovePodAnnotation("gpu-memory"), patcher.RemoveWholeGPUs(), patcher.SetGPUFraction("0.5")}},
		{name: "idempotent", ops: fractionAndVLLM},
		{name: "partial", ops: fractionAndVLLM, refused: []error{splice.ErrAlias}},
		{name: "refuse-alias", ops: fractionAndVLLM, refused: []error{splice.ErrAlias}},
		{name: "gpu-memory", ops: []workload.Op{patcher.SetGPUMemory(58983), patcher.SetVLLMMemoryUtilization("0.64")}},
		{name: "refuse-gpu-memory-next-to-fraction", ops: []workload.Op{patcher.SetGPUFraction("0.5"), patcher.SetGPUMemory(40960)}, refused: []error{workload.ErrInvalidValue}},
		{name: "refuse-merge-key", ops: fractionAndVLLM, refused: []error{splice.ErrAlias}},
		{name: "refuse-duplicate-key", ops: fractionAndVLLM, refused: []error{splice.ErrDuplicateKey}},
		{name: "refuse-template", ops: fractionAndVLLM, refused: []error{splice.ErrTemplate}},
		{name: "refuse-vllm-template", ops: fractionAndVLLM, refused: []error{
			splice.ErrTemplate, splice.ErrUnsupported, workload.ErrNoVLLMCommand,
		}},
		{
			name:      "refuse-conflict-markers",
			inventory: &patcher.Inventory{Workloads: []patcher.Workload{{Ref: dep("", "conflicted"), File: "deploy.yaml"}}},
			ops:       fractionAndVLLM,
			refused:   []error{splice.ErrConflictMarkers},
		},
		{
			name:      "refuse-invalid-yaml",
			inventory: &patcher.Inventory{Workloads: []patcher.Workload{{Ref: dep("", "broken"), File: "deploy.yaml"}}},
			ops:       fractionAndVLLM,
			refused:   []error{splice.ErrInvalidYAML},
		},
		// Every kind that is sized, each edited in its own pod templates:
		// a LeaderWorkerSet's leader and workers alike, the vLLM flag
		// where vLLM serves (a note for the ray workers).
		{name: "kinds", edits: []patcher.Edit{
			{Workload: usage.Ref{Kind: "StatefulSet", Namespace: "inference", Name: "embed"}, Reason: "golden", Ops: fractionAndVLLM},
			{Workload: usage.Ref{Kind: "Rollout", Namespace: "inference", Name: "chat"}, Reason: "golden", Ops: fractionAndVLLM},
			{Workload: usage.Ref{Kind: "LeaderWorkerSet", Namespace: "inference", Name: "llama"}, Reason: "golden", Ops: fractionAndVLLM},
		}, notes: []error{workload.ErrNoVLLMCommand}},
		// KServe's InferenceService, sized in its predictor: the pods'
		// annotations and labels are spec.predictor's own fields, and
		// model is one more container, the pod's first (its args go
		// after the runtime's, vLLM's flags among them). A model with no
		// args has no list to add the flag to, and is refused; so is
		// gpu-memory next to the object's own gpu-fraction.
		{name: "inferenceservice", edits: []patcher.Edit{
			{Workload: isvc("llama"), Reason: "golden", Ops: wholeToFraction},
			{Workload: isvc("chat"), Reason: "golden", Ops: fractionAndVLLM},
			{Workload: isvc("classifier"), Reason: "golden", Ops: toKAI},
			{Workload: isvc("summarizer"), Reason: "golden", Ops: wholeToFraction},
			// KServe gives the object's gpu-fraction to the pods too.
			{Workload: isvc("shared"), Reason: "golden", Ops: []workload.Op{patcher.SetGPUMemory(20480)}},
		}, refused: []error{workload.ErrNoVLLMCommand, workload.ErrInvalidValue}},
		// NVIDIA Dynamo's DynamoGraphDeployment, one workload per service,
		// named as the operator names its Deployment: the prefill worker
		// moves from its whole GPU (resources.limits.gpu) to KAI, the
		// decode worker's fraction and vLLM flag change in its
		// extraPodMetadata and mainContainer. The frontend asks for no GPU
		// and is not edited; neither is the multinode service.
		{name: "dynamo", edits: []patcher.Edit{
			{Workload: dgd("llama-disagg-vllmprefillworker"), Reason: "golden", Ops: toKAI},
			{Workload: dgd("llama-disagg-vllmdecodeworker"), Reason: "golden", Ops: []workload.Op{
				patcher.SetGPUFraction("0.25"), patcher.SetPodLabel("kai.scheduler/queue", "llm"), patcher.SetVLLMMemoryUtilization("0.22")}},
			{Workload: dgd("llama-disagg-vllmdecodeworker"), Reason: "golden", Ops: []workload.Op{patcher.SetWholeGPUs(1)}},
		}, refused: []error{workload.ErrInvalidValue}},
		// An Argo Rollout that runs a Deployment's pod template
		// (spec.workloadRef) is edited in that Deployment's document.
		// An edit of the Rollout's own labels is refused, and the
		// Deployment is no workload of its own; neither is a Rollout
		// whose Deployment is in another namespace.
		{name: "workloadref", edits: []patcher.Edit{
			{Workload: rollout("chat"), Reason: "golden", Ops: append(slices.Clone(fractionAndVLLM), patcher.SetPodLabel("kai.scheduler/queue", "team-b"))},
			{Workload: rollout("chat"), Reason: "golden", Ops: []workload.Op{patcher.SetWorkloadLabel("kai.scheduler/queue", "team-c")}},
			{Workload: dep("inference", "chat-template"), Reason: "golden", Ops: fractionAndVLLM},
			{Workload: rollout("embed"), Reason: "golden", Ops: fractionAndVLLM},
		}, refused: []error{workload.ErrTemplateElsewhere, workload.ErrNotFound, workload.ErrNotFound}},
		{name: "refuse-kinds", edits: []patcher.Edit{
			{Workload: usage.Ref{Kind: "DaemonSet", Name: "db"}, Ops: fractionAndVLLM},
			{Workload: dep("", "db"), Ops: fractionAndVLLM},
		}, refused: []error{workload.ErrUnsupportedKind, workload.ErrNotFound}},
	}
}

func TestGolden(t *testing.T) {
	for _, tc := range goldenCases() {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := filepath.Join("testdata", "golden", tc.name)
			orig := filepath.Join(dir, "original")

			inv := tc.inventory
			if inv == nil {
				var err error
				inv, err = patcher.Discover(ctx, orig)
				require.NoError(t, err)
			}
			requireErrors(t, tc.problems, problemErrs(inv.Problems), "problems")
			edits := tc.edits
			if edits == nil {
				for _, w := range inv.Workloads {
					edits = append(edits, patcher.Edit{Workload: w.Ref, File: w.File, Reason: "golden", Ops: tc.ops})
				}
			}
			res, err := patcher.Apply(ctx, orig, inv, edits)
			require.NoError(t, err)
			refused := refusedErrs(t, res)
			requireErrors(t, tc.refused, refused, "refusals")
			var notes []error
			for _, n := range res.Notes {
				notes = append(notes, n.Err)
				t.Logf("note: %v", n)
			}
			requireErrors(t, tc.notes, notes, "notes")

			out := t.TempDir()
			copyTree(t, orig, out)
			require.NoError(t, writeResult(out, res))
			for _, f := range res.Files {
				require.NotEqual(t, f.Old, f.New, f.Path)
				require.NotEmpty(t, f.Changes, f.Path)
				requireSplicesMake(t, f)
			}

			expected := filepath.Join(dir, "expected")
			if *update {
				writeExpected(t, expected, res.Files)
			}
			compareTrees(t, orig, expected, out)
		})
	}
}

func problemErrs(ps []patcher.Problem) []error {
	var out []error
	for _, p := range ps {
		out = append(out, p)
	}
	return out
}

// requireErrors checks got against want one by one with errors.Is.
func requireErrors(t *testing.T, want, got []error, what string) {
	t.Helper()
	require.Len(t, got, len(want), "%s: %v", what, got)
	for i := range want {
		require.ErrorIs(t, got[i], want[i], "%s[%d]", what, i)
	}
}

// requireSplicesMake checks that the reported splices turn Old into New.
func requireSplicesMake(t *testing.T, f patcher.File) {
	t.Helper()
	var b []byte
	at := 0
	for _, s := range f.Splices {
		require.GreaterOrEqual(t, s.Off, at, "splices sorted and disjoint")
		b = append(b, f.Old[at:s.Off]...)
		b = append(b, s.Text...)
		at = s.Off + s.Len
	}
	b = append(b, f.Old[at:]...)
	require.Equal(t, string(f.New), string(b), "splices of %s", f.Path)
}

// compareTrees checks that out equals expected for the files in expected,
// and equals orig for every other file.
func compareTrees(t *testing.T, orig, expected, out string) {
	t.Helper()
	want := readTree(t, orig)
	for p, b := range readTree(t, expected) {
		require.Contains(t, want, p, "expected/%s has no original", p)
		require.NotEqual(t, string(want[p]), string(b), "expected/%s is unchanged: expected/ holds only changed files", p)
		want[p] = b
	}
	got := readTree(t, out)
	require.Equal(t, sortedKeys(want), sortedKeys(got))
	for p := range want {
		require.Equal(t, string(want[p]), string(got[p]), "file %s", p)
	}
}

// writeExpected replaces the golden directory expected with the changed
// files, for -update.
func writeExpected(t *testing.T, expected string, files []patcher.File) {
	t.Helper()
	require.NoError(t, os.RemoveAll(expected))
	for _, f := range files {
		p := filepath.Join(expected, filepath.FromSlash(f.Path))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, f.New, 0o644))
	}
}

// problemFiles lists the files of the inventory's problems, logging each.
func problemFiles(t *testing.T, inv *patcher.Inventory) []string {
	t.Helper()
	var files []string
	for _, p := range inv.Problems {
		files = append(files, p.File)
		t.Logf("problem: %v", p)
	}
	return files
}

// refusedErrs lists the errors of the result's refused edits, logging each.
func refusedErrs(t *testing.T, res *patcher.Result) []error {
	t.Helper()
	var errs []error
	for _, r := range res.Refused {
		errs = append(errs, r.Err)
		t.Logf("refused: %v", r)
	}
	return errs
}

// workloadNames lists the inventory's workloads as "namespace/name in file".
func workloadNames(inv *patcher.Inventory) []string {
	var ws []string
	for _, w := range inv.Workloads {
		ws = append(ws, w.Ref.Namespace+"/"+w.Ref.Name+" in "+w.File)
	}
	return ws
}

func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == root {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = b
		return nil
	})
	require.NoError(t, err)
	return files
}

func sortedKeys(m map[string][]byte) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func copyTree(t *testing.T, from, to string) {
	t.Helper()
	for p, b := range readTree(t, from) {
		dst := filepath.Join(to, filepath.FromSlash(p))
		require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o755))
		require.NoError(t, os.WriteFile(dst, b, 0o644))
	}
}
