package live

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// graphWith is a graph of two services, decode and prefill, on which the
// tool's manager owns decode's fraction and args and the marker, with
// entries for the services named.
func graphWith(t *testing.T, entries ...string) *unstructured.Unstructured {
	t.Helper()
	marks := map[string]Marker{}
	for _, e := range entries {
		marks[e] = Marker{Fraction: Values{Old: "0.5", New: "0.75"}, Branch: "b-" + e, Number: 1}
	}
	enc, err := json.Marshal(graphMarker{Services: marks})
	require.NoError(t, err)
	owned := `{"f:metadata":{"f:annotations":{"f:gpu-rightsizing.dev/live-upsize":{}}},"f:spec":{"f:services":{"f:Decode":{"f:extraPodMetadata":{"f:annotations":{"f:gpu-fraction":{}}},"f:extraPodSpec":{"f:mainContainer":{"f:args":{}}}}}}}`
	doc := map[string]any{
		"apiVersion": "nvidia.com/v1alpha1", "kind": "DynamoGraphDeployment",
		"metadata": map[string]any{"name": "llama", "namespace": "inference", "resourceVersion": "7",
			"annotations": map[string]any{MarkerAnnotation: string(enc), "team": "a"},
			"managedFields": []any{
				map[string]any{"manager": FieldManager, "operation": "Apply", "fieldsType": "FieldsV1", "fieldsV1": json.RawMessage(owned)},
			}},
		"spec": map[string]any{"services": map[string]any{
			"Decode": map[string]any{"replicas": int64(2), "extraPodMetadata": map[string]any{"annotations": map[string]any{"gpu-fraction": "0.75"}},
				"extraPodSpec": map[string]any{"mainContainer": map[string]any{"image": "x", "args": []any{"--gpu-memory-utilization", "0.6"}}}},
			"Prefill": map[string]any{"extraPodMetadata": map[string]any{"annotations": map[string]any{"gpu-fraction": "0.5"}},
				"extraPodSpec": map[string]any{"mainContainer": map[string]any{"name": "vllm", "args": []any{"--gpu-memory-utilization=0.45"}}}},
		}},
	}
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	u := &unstructured.Unstructured{}
	require.NoError(t, u.UnmarshalJSON(b))
	return u
}

// TestServicePatch: an apply to one service of a graph carries what the
// tool owns of the other services at their live values, and every marker
// entry but the one it changes; giving a service up leaves the others
// whole, and the marker goes with its last entry. Nothing else of the
// graph is sent, and no empty map.
func TestServicePatch(t *testing.T) {
	k, _ := kindOf("DynamoGraphDeployment")
	m := &Marker{Fraction: Values{Old: "0.5", New: "0.6"}, Branch: "b-Prefill", Number: 2}
	tests := []struct {
		name     string
		graph    []string // marker entries on the graph
		service  string
		fraction string
		vllm     *VLLMValues
		args     []string
		marker   *Marker
		want     string
	}{
		{name: "a second service goes live beside the first", graph: []string{"Decode"}, service: "Prefill", fraction: "0.6",
			vllm: &VLLMValues{Container: "vllm"}, args: []string{"--gpu-memory-utilization=0.5"}, marker: m,
			want: `{"apiVersion":"nvidia.com/v1alpha1","kind":"DynamoGraphDeployment","metadata":{"annotations":{"gpu-rightsizing.dev/live-upsize":"{\"services\":{\"Decode\":{\"gpuFraction\":{\"old\":\"0.5\",\"new\":\"0.75\"},\"at\":\"0001-01-01T00:00:00Z\",\"reason\":\"\",\"pullRequest\":\"\",\"number\":1,\"branch\":\"b-Decode\"},\"Prefill\":{\"gpuFraction\":{\"old\":\"0.5\",\"new\":\"0.6\"},\"at\":\"0001-01-01T00:00:00Z\",\"reason\":\"\",\"pullRequest\":\"\",\"number\":2,\"branch\":\"b-Prefill\"}}}"},"name":"llama","namespace":"inference","resourceVersion":"7"},` +
				`"spec":{"services":{"Decode":{"extraPodMetadata":{"annotations":{"gpu-fraction":"0.75"}},"extraPodSpec":{"mainContainer":{"args":["--gpu-memory-utilization","0.6"]}}},"Prefill":{"extraPodMetadata":{"annotations":{"gpu-fraction":"0.6"}},"extraPodSpec":{"mainContainer":{"args":["--gpu-memory-utilization=0.5"]}}}}}}`},
		{name: "releasing one service keeps the other's", graph: []string{"Decode", "Prefill"}, service: "Prefill",
			want: `{"apiVersion":"nvidia.com/v1alpha1","kind":"DynamoGraphDeployment","metadata":{"annotations":{"gpu-rightsizing.dev/live-upsize":"{\"services\":{\"Decode\":{\"gpuFraction\":{\"old\":\"0.5\",\"new\":\"0.75\"},\"at\":\"0001-01-01T00:00:00Z\",\"reason\":\"\",\"pullRequest\":\"\",\"number\":1,\"branch\":\"b-Decode\"}}}"},"name":"llama","namespace":"inference","resourceVersion":"7"},` +
				`"spec":{"services":{"Decode":{"extraPodMetadata":{"annotations":{"gpu-fraction":"0.75"}},"extraPodSpec":{"mainContainer":{"args":["--gpu-memory-utilization","0.6"]}}}}}}`},
		{name: "releasing the last service: no marker, nothing owned", graph: []string{"Decode"}, service: "Decode",
			want: `{"apiVersion":"nvidia.com/v1alpha1","kind":"DynamoGraphDeployment","metadata":{"name":"llama","namespace":"inference","resourceVersion":"7"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := serviceObject(k, graphWith(t, tt.graph...), tt.service)
			require.NoError(t, err)
			got, err := servicePatch(o, tt.fraction, tt.vllm, tt.args, tt.marker)
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
		})
	}
}

// TestGraphMarkers: a graph's marker reads as entries by service, and
// one that is not the tool's is an error, never no marker.
func TestGraphMarkers(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string
		err         string
	}{
		{name: "two entries", value: `{"services":{"A":{"gpuFraction":{"new":"0.6"},"branch":"a"},"B":{"gpuFraction":{"new":"0.7"},"branch":"b"}}}`, want: []string{"A", "B"}},
		{name: "a marker of one object", value: `{"gpuFraction":{"old":"0.5","new":"0.6"},"branch":"a"}`, err: "no services"},
		{name: "an entry without a branch", value: `{"services":{"A":{"gpuFraction":{"new":"0.6"}}}}`, err: "service A: no gpuFraction.new or branch"},
		{name: "not JSON", value: `services`, err: "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := graphMarkers(map[string]string{MarkerAnnotation: tt.value})
			require.True(t, ok)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			var keys []string
			for k := range got {
				keys = append(keys, k)
			}
			require.ElementsMatch(t, tt.want, keys)
		})
	}
}
