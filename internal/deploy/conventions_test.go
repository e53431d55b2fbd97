package deploy_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	loaderv2 "helm.sh/helm/v4/pkg/chart/v2/loader"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sigsyaml "sigs.k8s.io/yaml"
)

// metas are the metadata of every object a rendering holds.
func metas(objs objects) []metav1.ObjectMeta {
	out := []metav1.ObjectMeta{objs.CronJob.ObjectMeta, objs.ConfigMap.ObjectMeta}
	if objs.ServiceAccount != nil {
		out = append(out, objs.ServiceAccount.ObjectMeta)
	}
	for _, o := range objs.ClusterRoles {
		out = append(out, o.ObjectMeta)
	}
	for _, o := range objs.ClusterRoleBindings {
		out = append(out, o.ObjectMeta)
	}
	for _, o := range objs.Roles {
		out = append(out, o.ObjectMeta)
	}
	for _, o := range objs.RoleBindings {
		out = append(out, o.ObjectMeta)
	}
	return out
}

// TestChartConventions: the settings well-kept charts share, each
// rendered and decoded strictly, and seen where it must land.
func TestChartConventions(t *testing.T) {
	tests := []struct {
		name   string
		values string
		check  func(t *testing.T, objs objects)
	}{
		{
			name:   "nameOverride",
			values: "nameOverride: rightsizing",
			check: func(t *testing.T, objs objects) {
				require.Equal(t, "gpu-rightsizing", objs.CronJob.Name)
				require.Equal(t, "gpu-rightsizing", objs.ConfigMap.Name)
				for _, m := range metas(objs) {
					require.Equal(t, "rightsizing", m.Labels["app.kubernetes.io/name"], m.Name)
				}
				require.Equal(t, "rightsizing", objs.CronJob.Spec.JobTemplate.Spec.Template.Labels["app.kubernetes.io/name"])
			},
		},
		{
			name:   "fullnameOverride",
			values: "fullnameOverride: gpu-rs",
			check: func(t *testing.T, objs objects) {
				require.Equal(t, "gpu-rs", objs.CronJob.Name)
				require.Equal(t, "gpu-rs", objs.ServiceAccount.Name)
				require.Equal(t, "gpu-rs", objs.CronJob.Spec.JobTemplate.Spec.Template.Spec.Volumes[0].ConfigMap.Name)
				require.Equal(t, "gpu-rs-kai-queues", objs.ClusterRoles[0].Name)
			},
		},
		{
			name:   "commonLabels",
			values: "commonLabels: {team: platform, cost-center: gpu}",
			check: func(t *testing.T, objs objects) {
				for _, m := range metas(objs) {
					require.Equal(t, "platform", m.Labels["team"], m.Name)
					require.Equal(t, "gpu", m.Labels["cost-center"], m.Name)
				}
				require.Equal(t, "platform", objs.CronJob.Spec.JobTemplate.Labels["team"])
				require.Equal(t, "platform", objs.CronJob.Spec.JobTemplate.Spec.Template.Labels["team"])
			},
		},
		{
			name:   "priorityClassName",
			values: "priorityClassName: batch-low",
			check: func(t *testing.T, objs objects) {
				require.Equal(t, "batch-low", objs.CronJob.Spec.JobTemplate.Spec.Template.Spec.PriorityClassName)
			},
		},
		{
			name: "security contexts overridden",
			values: "podSecurityContext: {runAsUser: 1000, runAsGroup: 1000, fsGroup: 1000}\n" +
				"securityContext: {readOnlyRootFilesystem: false}",
			check: func(t *testing.T, objs objects) {
				pod := objs.CronJob.Spec.JobTemplate.Spec.Template.Spec
				require.Equal(t, to[int64](1000), pod.SecurityContext.RunAsUser)
				require.Equal(t, to[int64](1000), pod.SecurityContext.FSGroup)
				// Helm merges a map over the default: the rest stays.
				require.Equal(t, to(true), pod.SecurityContext.RunAsNonRoot)
				c := pod.Containers[0].SecurityContext
				require.Equal(t, to(false), c.ReadOnlyRootFilesystem)
				require.Equal(t, to(false), c.AllowPrivilegeEscalation)
			},
		},
		{
			name: "scheduling",
			values: "nodeSelector: {kubernetes.io/arch: arm64}\n" +
				"tolerations: [{key: dedicated, operator: Equal, value: batch, effect: NoSchedule}]\n" +
				"affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 1, preference: {matchExpressions: [{key: pool, operator: In, values: [cpu]}]}}]}}",
			check: func(t *testing.T, objs objects) {
				pod := objs.CronJob.Spec.JobTemplate.Spec.Template.Spec
				require.Equal(t, map[string]string{"kubernetes.io/arch": "arm64"}, pod.NodeSelector)
				require.Equal(t, []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch", Effect: corev1.TaintEffectNoSchedule}}, pod.Tolerations)
				require.Equal(t, "pool", pod.Affinity.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].Preference.MatchExpressions[0].Key)
			},
		},
		{
			name:   "defaults",
			values: "",
			check: func(t *testing.T, objs objects) {
				pod := objs.CronJob.Spec.JobTemplate.Spec.Template.Spec
				require.Empty(t, pod.PriorityClassName)
				require.Nil(t, pod.Affinity)
				require.Equal(t, to[int64](65532), pod.SecurityContext.RunAsUser)
				require.Equal(t, "gpu-recommender", objs.CronJob.Name)
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := readValues(t, minimalSet)
			var extra map[string]any
			require.NoError(t, sigsyaml.Unmarshal([]byte(tt.values), &extra))
			for k, v := range extra {
				vals[k] = v
			}
			tt.check(t, render(t, vals))
		})
	}
}

// TestChartKubeVersion: the chart says which clusters it needs: the
// CronJob's timeZone is GA from Kubernetes 1.27.
func TestChartKubeVersion(t *testing.T) {
	ch, err := loaderv2.LoadDir(chartDir)
	require.NoError(t, err)
	require.Equal(t, ">=1.27.0-0", ch.Metadata.KubeVersion)
}

func to[T any](v T) *T { return &v }
