package plan_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/gpu-rightsizing/recommender/internal/plan"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

func TestFilterAdmits(t *testing.T) {
	chat := usage.Ref{Namespace: "team-a", Kind: "Deployment", Name: "chat"}
	lbls := map[string]string{"app": "chat", "tier": "gpu"}
	tests := []struct {
		name       string
		namespaces []string
		selector   string
		workloads  []string
		want       bool
	}{
		{name: "no filter", want: true},
		{name: "namespace", namespaces: []string{"team-a"}, want: true},
		{name: "other namespace", namespaces: []string{"team-b"}},
		{name: "one of the namespaces", namespaces: []string{"team-b", "team-a"}, want: true},
		{name: "namespace pattern", namespaces: []string{"team-*"}, want: true},
		{name: "namespace pattern misses", namespaces: []string{"ops-*"}},
		{name: "equality", selector: "app=chat", want: true},
		{name: "inequality", selector: "app!=chat"},
		{name: "set", selector: "app in (chat,embed),tier", want: true},
		{name: "absence", selector: "!tier"},
		{name: "absent label", selector: "team=a"},
		{name: "notin", selector: "app notin (embed)", want: true},
		{name: "name", workloads: []string{"chat"}, want: true},
		{name: "other name", workloads: []string{"embed"}},
		{name: "namespace/name", workloads: []string{"team-a/chat"}, want: true},
		{name: "namespace/name elsewhere", workloads: []string{"team-b/chat"}},
		{name: "namespace/Kind/name", workloads: []string{"team-a/Deployment/chat"}, want: true},
		{name: "kind in lower case", workloads: []string{"team-a/deployment/chat"}, want: true},
		{name: "other kind", workloads: []string{"team-a/StatefulSet/chat"}},
		{name: "name pattern", workloads: []string{"embed", "ch*"}, want: true},
		{name: "all of them", namespaces: []string{"team-a"}, selector: "tier=gpu", workloads: []string{"chat"}, want: true},
		{name: "all but the selector", namespaces: []string{"team-a"}, selector: "tier=cpu", workloads: []string{"chat"}},
		{name: "all but the namespace", namespaces: []string{"team-b"}, selector: "tier=gpu", workloads: []string{"chat"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, plan.CheckNamespaces(tt.namespaces))
			require.NoError(t, plan.CheckWorkloads(tt.workloads))
			sel, err := plan.ParseSelector(tt.selector)
			require.NoError(t, err)
			f := plan.Filter{Namespaces: tt.namespaces, Selector: sel, Workloads: tt.workloads}
			require.Equal(t, tt.name == "no filter", f.IsZero())
			require.Equal(t, tt.want, f.Admits(chat, lbls))
			// Without labels, only a filter with no selector can tell.
			require.Equal(t, tt.want && tt.selector == "", f.MayAdmit(chat))
		})
	}
}

func TestFilterRefusesTypos(t *testing.T) {
	for _, s := range []string{"=x", "app in (a", "a b", "!", "app=(x)"} {
		_, err := plan.ParseSelector(s)
		require.Error(t, err, s)
	}
	sel, err := plan.ParseSelector("  ")
	require.NoError(t, err)
	require.Nil(t, sel, "an empty selector selects everything")
	require.Error(t, plan.CheckNamespaces([]string{"team-["}))
	require.Error(t, plan.CheckNamespaces([]string{""}))
	require.Error(t, plan.CheckWorkloads([]string{"a/b/c/d"}))
	require.Error(t, plan.CheckWorkloads([]string{"ns//name"}))
	require.Error(t, plan.CheckWorkloads([]string{"ns/[x"}))
}

// TestFilterComesBeforeTheQueries: a workload the filter leaves out gets
// no row and is in no usage query, so fewer series are fetched; its
// Excludes answer is what a run reads to leave its pull request alone.
func TestFilterComesBeforeTheQueries(t *testing.T) {
	// chat moves to a namespace of its own; an unsupported DaemonSet asks
	// for GPUs beside it.
	dir := quickstartCopy(t, map[string][2]string{
		"apps/chat/deployment.yaml": {"namespace: inference", "namespace: research"},
	})
	require.NoError(t, os.WriteFile(filepath.Join(dir, "apps", "ds.yaml"), []byte(
		"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: ds, namespace: inference, labels: {app.kubernetes.io/name: ds}}\n"+
			"spec:\n  template:\n    spec: {containers: [{name: c, image: i, resources: {limits: {nvidia.com/gpu: 1}}}]}\n"), 0o644))
	measured := []string{"asr-whisper", "chat", "embed", "rerank", "summarize", "translate"}
	tests := []struct {
		name        string
		filter      func(t *testing.T) plan.Filter
		rows, query []string
	}{
		{name: "none", filter: func(*testing.T) plan.Filter { return plan.Filter{} },
			rows: []string{"asr-whisper", "chat", "ds", "embed", "ocr", "rerank", "summarize", "translate"}, query: measured},
		{name: "namespace", filter: func(*testing.T) plan.Filter { return plan.Filter{Namespaces: []string{"research"}} },
			rows: []string{"chat"}, query: []string{"chat"}},
		{name: "namespace pattern", filter: func(*testing.T) plan.Filter { return plan.Filter{Namespaces: []string{"inf*"}} },
			rows: []string{"asr-whisper", "ds", "embed", "ocr", "rerank", "summarize", "translate"}, query: []string{"asr-whisper", "embed", "rerank", "summarize", "translate"}},
		{name: "selector", filter: func(t *testing.T) plan.Filter {
			sel, err := plan.ParseSelector("app.kubernetes.io/name in (chat,embed,ds)")
			require.NoError(t, err)
			return plan.Filter{Selector: sel}
		}, rows: []string{"chat", "ds", "embed"}, query: []string{"chat", "embed"}},
		{name: "workloads", filter: func(*testing.T) plan.Filter {
			return plan.Filter{Workloads: []string{"research/Deployment/chat", "inference/rerank", "ds"}}
		}, rows: []string{"chat", "ds", "rerank"}, query: []string{"chat", "rerank"}},
		{name: "nothing", filter: func(*testing.T) plan.Filter { return plan.Filter{Namespaces: []string{"nowhere"}} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &counting{src: recorded(t)}
			p, err := plan.Make(context.Background(), plan.Options{Repo: dir, At: at, Source: src, Filter: tt.filter(t)})
			require.NoError(t, err)
			var rows, queried []string
			for _, d := range p.Decisions {
				rows = append(rows, d.Workload.Ref.Name)
			}
			for _, q := range src.queries {
				for _, r := range q.Workloads {
					queried = append(queried, r.Name)
				}
			}
			slices.Sort(rows)
			require.Equal(t, tt.rows, rows)
			require.ElementsMatch(t, tt.query, queried)
			if len(tt.query) == 0 {
				require.Empty(t, src.queries, "no query for no workload")
			}
			for _, d := range p.Decisions {
				require.False(t, p.Excludes(d.Workload.Ref.String()), d.Workload.Ref)
			}
			if tt.name != "none" {
				require.NotEqual(t, len(measured), len(queried))
			}
		})
	}
}

// TestFilterExcludes: what a run asks about a pull request's workloads.
func TestFilterExcludes(t *testing.T) {
	p, err := plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t)})
	require.NoError(t, err)
	require.False(t, p.Excludes("inference/Deployment/chat"), "no filter excludes nothing")
	require.False(t, p.Excludes("inference/Deployment/gone"), "no filter excludes nothing")

	p, err = plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t),
		Filter: plan.Filter{Workloads: []string{"chat", "gone"}}})
	require.NoError(t, err)
	require.False(t, p.Excludes("inference/Deployment/chat"))
	require.True(t, p.Excludes("inference/Deployment/embed"))
	require.False(t, p.Excludes("inference/Deployment/gone"), "a workload gone from the checkout that the filter names is in")
	require.True(t, p.Excludes("inference/Deployment/other"), "one it does not name is out")

	sel, err := plan.ParseSelector("app.kubernetes.io/name=chat")
	require.NoError(t, err)
	p, err = plan.Make(context.Background(), plan.Options{Repo: repo, At: at, Source: recorded(t), Filter: plan.Filter{Selector: sel}})
	require.NoError(t, err)
	require.False(t, p.Excludes("inference/Deployment/chat"))
	require.True(t, p.Excludes("inference/Deployment/embed"))
	require.True(t, p.Excludes("inference/Deployment/gone"), "its labels are gone: the selector cannot tell")
}

// TestUnselected: a plan of nothing that a mistake made says so — a
// filter that admits no workload, no policy in the repository or under
// its policy paths — and a plan that selects something says nothing.
func TestUnselected(t *testing.T) {
	noPolicies := quickstartCopy(t, nil)
	require.NoError(t, os.RemoveAll(filepath.Join(noPolicies, "policies")))
	sel, err := plan.ParseSelector("team=nobody")
	require.NoError(t, err)
	tests := []struct {
		name string
		opts plan.Options
		want []string
	}{
		{name: "a filter that admits some", opts: plan.Options{Repo: repo, Filter: plan.Filter{Namespaces: []string{"inf*"}}}},
		{name: "a namespace that admits none", opts: plan.Options{Repo: repo, Filter: plan.Filter{Namespaces: []string{"ml-*"}}},
			want: []string{"the filter (--namespace ml-*) admits none of the repository's 8 workload(s)"}},
		{name: "a selector and a workload that admit none", opts: plan.Options{Repo: repo, Filter: plan.Filter{Selector: sel, Workloads: []string{"chat"}}},
			want: []string{"the filter (--selector team=nobody, --workload chat) admits none of the repository's 8 workload(s)"}},
		{name: "no policy in the repository", opts: plan.Options{Repo: noPolicies},
			want: []string{"no policy found in the repository: no workload is governed (policies are documents of apiVersion gpu-rightsizing.github.io/v1alpha1)"}},
		{name: "no policy under the paths", opts: plan.Options{Repo: repo, PolicyPaths: []string{"apps"}},
			want: []string{"no policy found in apps: no workload is governed (policies are documents of apiVersion gpu-rightsizing.github.io/v1alpha1)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := plan.Govern(context.Background(), tt.opts)
			require.NoError(t, err)
			require.Equal(t, tt.want, p.Unselected())
		})
	}
}
