package deploy_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/live"
)

// The fields the examples use, as the CRDs of Argo CD, Flux and KAI name
// them: decoding strictly into these catches a misspelt or misplaced field
// without importing each project's API module.
type (
	argoApplication struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              struct {
			Project string `json:"project"`
			Source  struct {
				RepoURL        string `json:"repoURL"`
				TargetRevision string `json:"targetRevision"`
				Path           string `json:"path"`
			} `json:"source"`
			Destination struct {
				Server    string `json:"server"`
				Namespace string `json:"namespace"`
			} `json:"destination"`
			IgnoreDifferences []struct {
				Group                 string   `json:"group"`
				Kind                  string   `json:"kind"`
				ManagedFieldsManagers []string `json:"managedFieldsManagers"`
			} `json:"ignoreDifferences"`
			SyncPolicy struct {
				Automated struct {
					Prune    bool `json:"prune"`
					SelfHeal bool `json:"selfHeal"`
				} `json:"automated"`
				SyncOptions []string `json:"syncOptions"`
			} `json:"syncPolicy"`
		} `json:"spec"`
	}
	fluxGitRepository struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              struct {
			Interval metav1.Duration `json:"interval"`
			URL      string          `json:"url"`
			Ref      struct {
				Branch string `json:"branch"`
			} `json:"ref"`
		} `json:"spec"`
	}
	fluxKustomization struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              struct {
			Interval  metav1.Duration `json:"interval"`
			SourceRef struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"sourceRef"`
			Path             string          `json:"path"`
			Prune            bool            `json:"prune"`
			TargetNamespace  string          `json:"targetNamespace"`
			Wait             bool            `json:"wait"`
			Timeout          metav1.Duration `json:"timeout"`
			DriftIgnoreRules []struct {
				Paths  []string `json:"paths"`
				Target struct {
					Kind          string `json:"kind"`
					LabelSelector string `json:"labelSelector"`
				} `json:"target"`
			} `json:"driftIgnoreRules"`
		} `json:"spec"`
	}
	kaiQueueResource struct {
		Quota           float64 `json:"quota"`
		Limit           float64 `json:"limit"`
		OverQuotaWeight float64 `json:"overQuotaWeight"`
	}
	kaiQueue struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
		Spec              struct {
			ParentQueue string `json:"parentQueue"`
			Resources   struct {
				GPU    kaiQueueResource `json:"gpu"`
				CPU    kaiQueueResource `json:"cpu"`
				Memory kaiQueueResource `json:"memory"`
			} `json:"resources"`
		} `json:"spec"`
	}
)

// TestExamples builds each example with the kustomize API, as Argo CD and
// Flux do, and decodes every object strictly.
func TestExamples(t *testing.T) {
	tests := []struct {
		name  string
		dir   string
		kinds map[string]func() any // by apiVersion and kind
		want  []string              // kind/name of every object
	}{
		{
			name:  "Argo CD",
			dir:   "examples/argocd",
			kinds: map[string]func() any{"argoproj.io/v1alpha1 Application": func() any { return &argoApplication{} }},
			want:  []string{"Application/inference"},
		},
		{
			name: "Flux",
			dir:  "examples/flux",
			kinds: map[string]func() any{
				"source.toolkit.fluxcd.io/v1 GitRepository":    func() any { return &fluxGitRepository{} },
				"kustomize.toolkit.fluxcd.io/v1 Kustomization": func() any { return &fluxKustomization{} },
			},
			want: []string{"GitRepository/gitops", "Kustomization/inference"},
		},
		{
			name:  "KAI queues",
			dir:   "examples/kai-queues",
			kinds: map[string]func() any{"scheduling.run.ai/v2 Queue": func() any { return &kaiQueue{} }},
			want:  []string{"Queue/inference", "Queue/team-assistants", "Queue/team-docs", "Queue/team-i18n"},
		},
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, err := filepath.Abs(filepath.Join(root, tt.dir))
			require.NoError(t, err)
			m, err := k.Run(filesys.MakeFsOnDisk(), dir)
			require.NoError(t, err)
			var got []string
			objs := map[string]any{}
			for _, r := range m.Resources() {
				b, err := r.AsYAML()
				require.NoError(t, err)
				newObj, ok := tt.kinds[r.GetApiVersion()+" "+r.GetKind()]
				require.True(t, ok, "unexpected %s %s", r.GetApiVersion(), r.GetKind())
				obj := newObj()
				require.NoError(t, decodeStrict(t, b, obj), "%s", b)
				got = append(got, r.GetKind()+"/"+r.GetName())
				objs[r.GetKind()+"/"+r.GetName()] = obj
			}
			require.ElementsMatch(t, tt.want, got)
			// The queues the quickstart's Deployments name exist, under
			// one parent.
			if q, ok := objs["Queue/team-docs"].(*kaiQueue); ok {
				require.Equal(t, "inference", q.Spec.ParentQueue)
			}
			// Flux's Kustomization reads the GitRepository beside it, and
			// leaves the fields of a live change to the recommender.
			if ks, ok := objs["Kustomization/inference"].(*fluxKustomization); ok {
				require.Equal(t, "GitRepository", ks.Spec.SourceRef.Kind)
				require.Contains(t, objs, "GitRepository/"+ks.Spec.SourceRef.Name)
				require.Len(t, ks.Spec.DriftIgnoreRules, 1)
				require.Equal(t, []string{"/spec/template/metadata/annotations/" + kai.FractionAnnotation, "/spec/template/spec/containers/0/args"},
					ks.Spec.DriftIgnoreRules[0].Paths)
				require.Equal(t, "Deployment", ks.Spec.DriftIgnoreRules[0].Target.Kind)
			}
			// Argo CD ignores, and keeps on sync, the fields the
			// recommender's field manager owns: self-heal does not revert a
			// live upsize.
			if app, ok := objs["Application/inference"].(*argoApplication); ok {
				require.Len(t, app.Spec.IgnoreDifferences, 1)
				require.Equal(t, "apps", app.Spec.IgnoreDifferences[0].Group)
				require.Equal(t, "Deployment", app.Spec.IgnoreDifferences[0].Kind)
				require.Equal(t, []string{live.FieldManager}, app.Spec.IgnoreDifferences[0].ManagedFieldsManagers)
				require.Contains(t, app.Spec.SyncPolicy.SyncOptions, "RespectIgnoreDifferences=true")
			}
		})
	}
}
