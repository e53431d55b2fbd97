package deploy_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	"helm.sh/helm/v4/pkg/chart/loader"
	"helm.sh/helm/v4/pkg/engine"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// renderedDoc is one object of a rendering, as the text Helm would send.
type renderedDoc struct {
	template string
	text     string
	meta     struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name      string `json:"name"`
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
}

func (d renderedDoc) String() string {
	return fmt.Sprintf("%s %s/%s (%s)", d.meta.Kind, d.meta.Metadata.Namespace, d.meta.Metadata.Name, d.template)
}

// renderDocs renders the chart as render does and returns its objects as
// text, in a stable order.
func renderDocs(t *testing.T, vals map[string]any) []renderedDoc {
	t.Helper()
	ch, err := loader.Load(chartDir)
	require.NoError(t, err)
	top, err := util.ToRenderValues(ch, vals, common.ReleaseOptions{Name: release, Namespace: namespace, IsInstall: true}, nil)
	require.NoError(t, err)
	out, err := engine.Render(ch, top)
	require.NoError(t, err)
	var docs []renderedDoc
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for _, text := range docSep.Split(out[name], -1) {
			if strings.TrimSpace(text) == "" {
				continue
			}
			d := renderedDoc{template: name, text: text}
			require.NoError(t, sigsyaml.Unmarshal([]byte(text), &d.meta), name)
			docs = append(docs, d)
		}
	}
	return docs
}

// collectionPaths are where the API serves each kind the chart renders.
var collectionPaths = map[string]string{
	"batch/v1 CronJob":                                "/apis/batch/v1/namespaces/%s/cronjobs",
	"v1 ServiceAccount":                               "/api/v1/namespaces/%s/serviceaccounts",
	"v1 ConfigMap":                                    "/api/v1/namespaces/%s/configmaps",
	"rbac.authorization.k8s.io/v1 ClusterRole":        "/apis/rbac.authorization.k8s.io/v1/clusterroles",
	"rbac.authorization.k8s.io/v1 ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
	"rbac.authorization.k8s.io/v1 Role":               "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles",
	"rbac.authorization.k8s.io/v1 RoleBinding":        "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings",
}

func objectPath(t *testing.T, d renderedDoc) string {
	t.Helper()
	coll, ok := collectionPaths[d.meta.APIVersion+" "+d.meta.Kind]
	require.True(t, ok, "%v: no path known for this kind", d)
	if strings.Contains(coll, "%s") {
		require.NotEmpty(t, d.meta.Metadata.Namespace, "%v: a namespaced object names its namespace", d)
		coll = fmt.Sprintf(coll, d.meta.Metadata.Namespace)
	} else {
		require.Empty(t, d.meta.Metadata.Namespace, "%v: a cluster-scoped object names no namespace", d)
	}
	return coll + "/" + d.meta.Metadata.Name
}

// TestChartOnCluster creates what the chart renders, for the defaults and
// every option set, on a real API server — which validates every object,
// defaults it and stores it — reads each back, and asks the server's own
// RBAC authorizer what the job's ServiceAccount may do. Each option set
// gets a server of its own, because the sets share object names.
func TestChartOnCluster(t *testing.T) {
	for _, set := range optionSets(t) {
		t.Run("values "+set, func(t *testing.T) {
			vals := readValues(t, set)
			docs := renderDocs(t, vals)
			objs := render(t, vals)
			kube := kubeenv.StartAPIServer(t)

			// The namespaces first: the release's and each one an object
			// names, as the cluster would already hold them.
			namespaces := map[string]bool{namespace: true}
			manifest := []string{}
			for _, d := range docs {
				if ns := d.meta.Metadata.Namespace; ns != "" {
					namespaces[ns] = true
				}
				manifest = append(manifest, d.text)
			}
			for _, ns := range slices.Sorted(maps.Keys(namespaces)) {
				manifest = append(manifest, "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: "+ns+"\n")
			}
			kube.Apply(t, []byte(strings.Join(manifest, "\n---\n")))

			// Every object reads back holding every field as rendered;
			// the server adds its defaults and its metadata, nothing else.
			for _, d := range docs {
				status, body := kube.Do(t, kubeenv.Admin, http.MethodGet, objectPath(t, d), nil, "")
				require.Equal(t, http.StatusOK, status, "%v: %s", d, body)
				var want, got any
				require.NoError(t, sigsyaml.Unmarshal([]byte(d.text), &want), "%v", d)
				require.NoError(t, json.Unmarshal(body, &got), "%v", d)
				require.Empty(t, missingFields("", want, got), "%v: fields the server did not keep as rendered", d)
			}

			// The ServiceAccount may do exactly what the chart grants it,
			// as the cluster's RBAC authorizer sees it.
			sa := objs.CronJob.Spec.JobTemplate.Spec.Template.Spec.ServiceAccountName
			granted := map[string]bool{}
			for _, g := range grants(t, objs) {
				granted[g] = true
			}
			probeNamespaces := slices.Sorted(maps.Keys(namespaces))
			probeNamespaces = append(probeNamespaces, "default")
			type probe struct{ ns, group, resource, verb string }
			var probes []probe
			for _, ns := range probeNamespaces {
				for _, verb := range []string{"get", "list", "watch", "patch", "update", "delete", "create"} {
					probes = append(probes, probe{ns, "apps", "deployments", verb}, probe{ns, "apps", "statefulsets", verb},
						probe{ns, "argoproj.io", "rollouts", verb}, probe{ns, "leaderworkerset.x-k8s.io", "leaderworkersets", verb},
						probe{ns, "serving.kserve.io", "inferenceservices", verb}, probe{ns, "nvidia.com", "dynamographdeployments", verb})
				}
				probes = append(probes, probe{ns, "", "secrets", "get"}, probe{ns, "", "pods", "list"})
			}
			for _, verb := range []string{"get", "list", "patch", "update"} {
				probes = append(probes, probe{"", "scheduling.run.ai", "queues", verb})
			}
			for _, p := range probes {
				want := granted[strings.Join([]string{p.ns, p.group, p.resource, p.verb}, " ")] ||
					granted[strings.Join([]string{"", p.group, p.resource, p.verb}, " ")]
				got := allowed(t, kube, "system:serviceaccount:"+namespace+":"+sa, namespace, p.ns, p.group, p.resource, p.verb)
				require.Equal(t, want, got, "may %s %s.%s in namespace %q", p.verb, p.resource, p.group, p.ns)
			}
		})
	}
}

// allowed asks the API server whether a ServiceAccount may do verb on
// resource, through a SubjectAccessReview.
func allowed(t *testing.T, kube *kubeenv.APIServer, user, saNamespace, ns, group, resource, verb string) bool {
	t.Helper()
	review := map[string]any{
		"apiVersion": "authorization.k8s.io/v1",
		"kind":       "SubjectAccessReview",
		"spec": map[string]any{
			"user":   user,
			"groups": []string{"system:serviceaccounts", "system:serviceaccounts:" + saNamespace, "system:authenticated"},
			"resourceAttributes": map[string]any{
				"namespace": ns, "group": group, "resource": resource, "verb": verb,
			},
		},
	}
	body, err := json.Marshal(review)
	require.NoError(t, err)
	status, resp := kube.Do(t, kubeenv.Admin, http.MethodPost, "/apis/authorization.k8s.io/v1/subjectaccessreviews", body, "")
	require.Equal(t, http.StatusCreated, status, string(resp))
	var answer struct {
		Status struct {
			Allowed bool `json:"allowed"`
		} `json:"status"`
	}
	require.NoError(t, json.Unmarshal(resp, &answer))
	return answer.Status.Allowed
}

// missingFields lists, by path, each value of want that got does not hold
// equal: a field of a map may be added in got, but none removed or changed.
// A list must keep its length and order. A null in want matches a field
// got leaves out.
func missingFields(path string, want, got any) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: want an object, got %v", path, got)}
		}
		var out []string
		for _, k := range slices.Sorted(maps.Keys(w)) {
			gv, present := g[k]
			if !present {
				if w[k] != nil && !isEmpty(w[k]) {
					out = append(out, fmt.Sprintf("%s.%s: missing (want %v)", path, k, w[k]))
				}
				continue
			}
			out = append(out, missingFields(path+"."+k, w[k], gv)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{fmt.Sprintf("%s: want %v, got %v", path, w, got)}
		}
		var out []string
		for i := range w {
			out = append(out, missingFields(fmt.Sprintf("%s[%d]", path, i), w[i], g[i])...)
		}
		return out
	default:
		// Both sides come from JSON: numbers are float64 on each.
		if !reflect.DeepEqual(want, got) {
			return []string{fmt.Sprintf("%s: want %#v, got %#v", path, want, got)}
		}
		return nil
	}
}

// isEmpty reports an empty map or list, which the API server drops as it
// drops a field left out.
func isEmpty(v any) bool {
	switch v := v.(type) {
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// TestMissingFields: the read-back comparison of TestChartOnCluster lets
// the server add fields, and nothing else.
func TestMissingFields(t *testing.T) {
	tests := []struct {
		name      string
		want, got string
		missing   []string
	}{
		{name: "equal", want: `{"a":1,"b":["x"]}`, got: `{"a":1,"b":["x"]}`},
		{name: "defaults added", want: `{"a":{"b":1}}`, got: `{"a":{"b":1,"c":2},"d":3}`},
		{name: "null or empty left out", want: `{"a":null,"b":{},"c":[]}`, got: `{}`},
		{name: "field dropped", want: `{"a":{"b":1}}`, got: `{"a":{}}`, missing: []string{".a.b: missing (want 1)"}},
		{name: "value changed", want: `{"a":"500m"}`, got: `{"a":"0.5"}`, missing: []string{`.a: want "500m", got "0.5"`}},
		{name: "type changed", want: `{"a":"1"}`, got: `{"a":1}`, missing: []string{`.a: want "1", got 1`}},
		{name: "list shortened", want: `{"a":[1,2]}`, got: `{"a":[1]}`, missing: []string{".a: want [1 2], got [1]"}},
		{name: "list item changed", want: `{"a":[{"b":1}]}`, got: `{"a":[{"b":2}]}`, missing: []string{".a[0].b: want 1, got 2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var want, got any
			require.NoError(t, json.Unmarshal([]byte(tt.want), &want))
			require.NoError(t, json.Unmarshal([]byte(tt.got), &got))
			require.Equal(t, tt.missing, missingFields("", want, got))
		})
	}
}
