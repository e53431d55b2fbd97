package live

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestRefuseKind: the kinds whose controller would not roll pods from a
// pod template change, read from the live object alone (docs/live.md,
// "Kinds").
func TestRefuseKind(t *testing.T) {
	tests := []struct {
		name, kind, spec string
		want             string // "" when it goes live
	}{
		{"a StatefulSet rolling", "StatefulSet", `{"updateStrategy":{"type":"RollingUpdate"}}`, ""},
		{"a StatefulSet with no strategy (RollingUpdate)", "StatefulSet", `{}`, ""},
		{"a StatefulSet under OnDelete", "StatefulSet", `{"updateStrategy":{"type":"OnDelete"}}`, "StatefulSet inference/llm has updateStrategy OnDelete"},
		{"a StatefulSet partitioned", "StatefulSet", `{"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":2}}}`, "a rolling update partition of 2"},
		{"a StatefulSet partition 0", "StatefulSet", `{"updateStrategy":{"rollingUpdate":{"partition":0}}}`, ""},
		{"a Rollout", "Rollout", `{"strategy":{"canary":{}}}`, ""},
		{"a paused Rollout", "Rollout", `{"paused":true}`, "is paused (spec.paused)"},
		{"a Rollout of another workload's template", "Rollout", `{"workloadRef":{"kind":"Deployment","name":"llm"}}`, "spec.workloadRef"},
		{"a LeaderWorkerSet", "LeaderWorkerSet", `{"rolloutStrategy":{"type":"RollingUpdate"}}`, ""},
		{"a LeaderWorkerSet partitioned", "LeaderWorkerSet", `{"rolloutStrategy":{"rollingUpdateConfiguration":{"partition":1}}}`, "groups below that index keep the old request"},
		// A spec that goes on to a metadata or status replaces the
		// object's own: JSON keeps a repeated key's last value.
		{"an InferenceService", "InferenceService", `{"predictor":{"annotations":{"gpu-fraction":"0.5"}}}`, ""},
		{"an InferenceService stopped", "InferenceService", `{"predictor":{}},"metadata":{"name":"llm","namespace":"inference","annotations":{"serving.kserve.io/stop":"True"}}`, "InferenceService inference/llm is stopped (serving.kserve.io/stop)"},
		{"an InferenceService stop false", "InferenceService", `{"predictor":{}},"metadata":{"name":"llm","namespace":"inference","annotations":{"serving.kserve.io/stop":"false"}}`, ""},
		{"an InferenceService on ModelMesh", "InferenceService", `{"predictor":{}},"metadata":{"name":"llm","namespace":"inference","annotations":{"serving.kserve.io/deploymentMode":"ModelMesh"}}`, "is served by ModelMesh"},
		{"an InferenceService recorded on ModelMesh", "InferenceService", `{"predictor":{}},"status":{"deploymentMode":"ModelMesh"}`, "is served by ModelMesh"},
		{"an InferenceService Standard", "InferenceService", `{"predictor":{}},"metadata":{"name":"llm","namespace":"inference","annotations":{"serving.kserve.io/deploymentMode":"Standard"}}`, ""},
		{"an InferenceService with a canary", "InferenceService", `{"predictor":{"canaryTrafficPercent":10}}`, "sends 10% of its traffic to a canary"},
		{"an InferenceService with the canary at 100", "InferenceService", `{"predictor":{"canaryTrafficPercent":100}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := kindOf(tt.kind)
			if !ok {
				t.Fatalf("%s not in the table", tt.kind)
			}
			// Decoded as the dynamic client decodes the server's answer:
			// integers as int64.
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"X","metadata":{"name":"llm","namespace":"inference"},"spec":` + tt.spec + `}`)); err != nil {
				t.Fatal(err)
			}
			o, err := unstructuredObject(k, u)
			if err != nil {
				t.Fatal(err)
			}
			got := refuseKind(o)
			if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
				t.Fatalf("%q, want %q", got, tt.want)
			}
		})
	}
}

// TestLeaderTemplate: a LeaderWorkerSet's leader is sized with its
// workers when it asks for GPUs, left alone when it runs on the CPU, and
// templates that ask for different fractions are left to the pull
// request.
func TestLeaderTemplate(t *testing.T) {
	tmpl := func(fraction string) map[string]any {
		m := map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "c"}}}}
		if fraction != "" {
			m["metadata"] = map[string]any{"annotations": map[string]any{"gpu-fraction": fraction}}
		}
		return m
	}
	tests := []struct {
		name           string
		leader, worker map[string]any
		templates      int
		fraction, err  string
	}{
		{"no leader template", nil, tmpl("0.5"), 1, "0.5", ""},
		{"a CPU leader", tmpl(""), tmpl("0.5"), 1, "0.5", ""},
		{"a GPU leader alike", tmpl("0.5"), tmpl("0.5"), 2, "0.5", ""},
		{"a GPU leader asking for another fraction", tmpl("0.25"), tmpl("0.5"), 2, "", "ask for different gpu-fractions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lwt := map[string]any{"workerTemplate": tt.worker}
			if tt.leader != nil {
				lwt["leaderTemplate"] = tt.leader
			}
			k, _ := kindOf("LeaderWorkerSet")
			o, err := unstructuredObject(k, &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"leaderWorkerTemplate": lwt}}})
			if err != nil {
				t.Fatal(err)
			}
			if len(o.templates) != tt.templates {
				t.Fatalf("%d templates, want %d", len(o.templates), tt.templates)
			}
			f, err := o.liveFraction()
			if f != tt.fraction || (err == nil) != (tt.err == "") || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("%q %v, want %q %q", f, err, tt.fraction, tt.err)
			}
		})
	}
}

// TestPick: what a manager applied, picked out of an object by its
// fieldsV1, as the release hands it back.
func TestPick(t *testing.T) {
	obj := map[string]any{
		"spec": map[string]any{"replicas": int64(2), "paused": false, "containers": []any{
			map[string]any{"name": "vllm", "image": "v", "args": []any{"--a", "1"}, "ports": []any{map[string]any{"containerPort": int64(8000), "protocol": "TCP"}}},
			map[string]any{"name": "sidecar", "image": "s"},
		}, "finalizers": []any{"x", "y"}},
	}
	tests := []struct {
		name, fields, want string
	}{
		{"a field", `{"f:spec":{"f:replicas":{}}}`, `{"spec":{"replicas":2}}`},
		{"an atomic list whole", `{"f:spec":{"f:containers":{"k:{\"name\":\"vllm\"}":{".":{},"f:args":{}}}}}`, `{"spec":{"containers":[{"args":["--a","1"],"name":"vllm"}]}}`},
		{"a keyed item's own keyed list", `{"f:spec":{"f:containers":{"k:{\"name\":\"vllm\"}":{"f:ports":{"k:{\"containerPort\":8000,\"protocol\":\"TCP\"}":{".":{}}}}}}}`,
			`{"spec":{"containers":[{"name":"vllm","ports":[{"containerPort":8000,"protocol":"TCP"}]}]}}`},
		{"a set's value", `{"f:spec":{"f:finalizers":{"v:\"y\"":{}}}}`, `{"spec":{"finalizers":["y"]}}`},
		{"a field the object lacks", `{"f:spec":{"f:minReadySeconds":{}}}`, `{"spec":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var node map[string]any
			if err := json.Unmarshal([]byte(tt.fields), &node); err != nil {
				t.Fatal(err)
			}
			got, err := json.Marshal(pick(obj, node))
			if err != nil || string(got) != tt.want {
				t.Fatalf("%s, want %s (%v)", got, tt.want, err)
			}
		})
	}
}

// TestComponentPod: a KServe predictor is read as the pod KServe builds
// from it, its serving container first under KServe's name, and only
// that container's args may be owned alone; the apply configuration puts
// the fields where the predictor holds them.
func TestComponentPod(t *testing.T) {
	tests := []struct {
		name, predictor string
		containers      []string
		serving         string
		owns            map[string]bool
		patch           string // of a change to 0.75 and, when owned, the first container's args
	}{
		{"a model", `{"annotations":{"gpu-fraction":"0.5"},"model":{"modelFormat":{"name":"huggingface"},"args":["--gpu-memory-utilization=0.45"]}}`,
			[]string{"kserve-container"}, "model", map[string]bool{"kserve-container": true},
			`{"spec":{"predictor":{"annotations":{"gpu-fraction":"0.75"},"model":{"args":["x"]}}}}`},
		{"a named model and a sidecar", `{"model":{"name":"vllm","args":["a"]},"containers":[{"name":"side","args":["b"]}]}`,
			[]string{"vllm", "side"}, "model", map[string]bool{"vllm": true, "side": false},
			`{"spec":{"predictor":{"annotations":{"gpu-fraction":"0.75"},"model":{"args":["x"]}}}}`},
		{"a framework field", `{"huggingface":{"args":["a"]}}`,
			[]string{"kserve-container"}, "huggingface", map[string]bool{"kserve-container": true},
			`{"spec":{"predictor":{"annotations":{"gpu-fraction":"0.75"},"huggingface":{"args":["x"]}}}}`},
		{"containers only", `{"containers":[{"name":"vllm","args":["a"]}]}`,
			[]string{"vllm"}, "", map[string]bool{"vllm": false},
			`{"spec":{"predictor":{"annotations":{"gpu-fraction":"0.75"}}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, _ := kindOf("InferenceService")
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(`{"apiVersion":"serving.kserve.io/v1beta1","kind":"InferenceService","metadata":{"name":"llm","namespace":"inference"},"spec":{"predictor":` + tt.predictor + `}}`)); err != nil {
				t.Fatal(err)
			}
			o, err := unstructuredObject(k, u)
			if err != nil {
				t.Fatal(err)
			}
			if len(o.templates) != 1 {
				t.Fatalf("%d templates", len(o.templates))
			}
			tp := &o.templates[0]
			var names []string
			for _, c := range tp.spec.Spec.Containers {
				names = append(names, c.Name)
			}
			if strings.Join(names, ",") != strings.Join(tt.containers, ",") || tp.serving != tt.serving {
				t.Fatalf("containers %v serving %q, want %v %q", names, tp.serving, tt.containers, tt.serving)
			}
			for c, want := range tt.owns {
				if got := tp.ownsArgs(c); got != want {
					t.Fatalf("ownsArgs(%s) = %v", c, got)
				}
			}
			var vllm *VLLMValues
			var args []string
			if first := tt.containers[0]; tt.owns[first] {
				vllm, args = &VLLMValues{Container: first}, []string{"x"}
			}
			b, err := applyPatch(o, "0.75", vllm, args, nil)
			if err != nil {
				t.Fatal(err)
			}
			want := `{"apiVersion":"serving.kserve.io/v1beta1","kind":"InferenceService","metadata":{"name":"llm","namespace":"inference"},` + tt.patch[1:]
			if string(b) != want {
				t.Fatalf("patch\n%s\nwant\n%s", b, want)
			}
		})
	}
}
