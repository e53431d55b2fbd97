package kubeenv

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// The objects a cluster's controllers and kubelets would make, made here
// by hand: no controller or kubelet runs beside the tests' API server. A
// Deployment gets its ReplicaSet and pods, a StatefulSet its pods, each
// with the ownerReferences, labels and status the real ones carry, status
// written through the status subresource as a kubelet writes it. That is
// all kube-state-metrics reads.

// ObjectRef names an object the server holds, as an ownerReference does.
type ObjectRef struct {
	APIVersion, Kind, Namespace, Name, UID string
}

// Node is a node as the tests need it: its labels and its GPUs.
type Node struct {
	Name   string
	Labels map[string]string
	// GPUs is the node's nvidia.com/gpu capacity and allocatable, as the
	// NVIDIA device plugin reports them; 0 leaves the resource out.
	GPUs int
}

// CreateNode creates n as Admin and sets its status (Ready, capacity and
// allocatable) through the status subresource, as a kubelet does, with
// no taint.
func (s *APIServer) CreateNode(t testing.TB, n Node) ObjectRef {
	t.Helper()
	ref := s.create(t, "/api/v1/nodes", map[string]any{
		"apiVersion": "v1",
		"kind":       "Node",
		"metadata":   map[string]any{"name": n.Name, "labels": n.Labels},
	})
	// The API server taints a new node not-ready; the node lifecycle
	// controller lifts that once the kubelet reports Ready, and none runs.
	code, resp := s.Do(t, Admin, http.MethodPatch, "/api/v1/nodes/"+n.Name, []byte(`{"spec":{"taints":null}}`), "application/merge-patch+json")
	if code != http.StatusOK {
		t.Fatalf("PATCH node %s: %d %s", n.Name, code, statusMessage(resp))
	}
	resources := map[string]string{"cpu": "64", "memory": "512Gi", "pods": "110", "ephemeral-storage": "1Ti"}
	if n.GPUs > 0 {
		resources["nvidia.com/gpu"] = strconv.Itoa(n.GPUs)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	s.patchStatus(t, "/api/v1/nodes/"+n.Name, map[string]any{
		"capacity":    resources,
		"allocatable": resources,
		"conditions": []map[string]any{{
			"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "kubelet is posting ready status",
			"lastHeartbeatTime": now, "lastTransitionTime": now,
		}},
		"nodeInfo": map[string]any{
			"kubeletVersion": APIServerVersion, "containerRuntimeVersion": "containerd://2.1.4",
			"kernelVersion": "6.8.0-1024-aws", "osImage": "Ubuntu 24.04.2 LTS",
			"operatingSystem": "linux", "architecture": "amd64",
		},
	})
	return ref
}

// PodTemplate is what the pods of a workload share.
type PodTemplate struct {
	Labels, Annotations map[string]string
	// Container names the pod's one container; "main" when empty.
	Container string
	// Image is the container's image; vLLM's when empty.
	Image string
	// GPUs is the container's nvidia.com/gpu limit; 0 sets none.
	GPUs int
	// SchedulerName is spec.schedulerName ("kai-scheduler"); empty for
	// the default scheduler.
	SchedulerName string
}

// Pod phases, as a kubelet writes them.
const (
	PodPending   = "Pending"
	PodRunning   = "Running"
	PodSucceeded = "Succeeded"
	PodFailed    = "Failed"
)

// PodState is where one pod runs and how it is doing.
type PodState struct {
	// Node is spec.nodeName: the node it was bound to; "" leaves a
	// Pending pod unscheduled.
	Node string
	// Phase is PodRunning when empty.
	Phase string
	// Reason and Message are status.reason and status.message: "Evicted"
	// with PodFailed is a pod the kubelet evicted (its message is then
	// the kubelet's when empty).
	Reason, Message string
}

// Workload is a Deployment or a StatefulSet with its pods, one PodState a
// pod.
type Workload struct {
	// Kind is "Deployment" or "StatefulSet".
	Kind            string
	Namespace, Name string
	// Labels are the workload's own (metadata.labels), not its pods'.
	Labels map[string]string
	// Owner, when not nil, controls the workload: an InferenceService
	// its Deployment, say. Nothing checks that it exists.
	Owner    *ObjectRef
	Template PodTemplate
	// Replicas is spec.replicas; when 0, the number of pods neither
	// Failed nor Succeeded, as a controller that has settled leaves it.
	Replicas int
	Pods     []PodState
}

// CreatedWorkload names what CreateWorkload made.
type CreatedWorkload struct {
	// Owner is the Deployment or StatefulSet.
	Owner ObjectRef
	// ReplicaSet is the Deployment's, named <deployment>-<hash>; zero for
	// a StatefulSet.
	ReplicaSet ObjectRef
	// Pods are in the order of Workload.Pods: <replicaset>-<suffix> for a
	// Deployment, <statefulset>-<ordinal> for a StatefulSet.
	Pods []ObjectRef
}

// CreateWorkload creates w's namespace (if missing), w, and what its
// controller would: for a Deployment a ReplicaSet it controls and the
// pods that ReplicaSet controls, for a StatefulSet its pods, each pod's
// status set as its kubelet would. The workload's status counts its pods.
func (s *APIServer) CreateWorkload(t testing.TB, w Workload) CreatedWorkload {
	t.Helper()
	s.ensureNamespace(t, w.Namespace)
	p := planWorkload(w)
	switch w.Kind {
	case "Deployment":
		return s.createDeployment(t, w, p)
	case "StatefulSet":
		return s.createStatefulSet(t, w, p)
	}
	t.Fatalf("CreateWorkload %s/%s: kind %q is not Deployment or StatefulSet", w.Namespace, w.Name, w.Kind)
	return CreatedWorkload{}
}

// workloadPlan is what a workload's objects are made of.
type workloadPlan struct {
	active, ready, replicas int // pods neither Failed nor Succeeded, Running ones, spec.replicas
	podLabels               map[string]string
	selector                map[string]any
	hash                    string // of the pod template, as a controller names it
	meta                    map[string]any
}

func planWorkload(w Workload) workloadPlan {
	var p workloadPlan
	for _, pod := range w.Pods {
		switch phase(pod) {
		case PodFailed, PodSucceeded:
		case PodRunning:
			p.active++
			p.ready++
		default:
			p.active++
		}
	}
	p.replicas = w.Replicas
	if p.replicas == 0 {
		p.replicas = p.active
	}
	p.podLabels = map[string]string{"app": w.Name}
	maps.Copy(p.podLabels, w.Template.Labels)
	p.selector = map[string]any{"matchLabels": map[string]string{"app": p.podLabels["app"]}}
	p.hash = safeHash(w.Namespace+"/"+w.Name, 10)
	p.meta = map[string]any{"name": w.Name, "namespace": w.Namespace, "labels": w.Labels}
	if w.Owner != nil {
		p.meta["ownerReferences"] = []map[string]any{ownerReference(*w.Owner)}
	}
	return p
}

func (s *APIServer) createDeployment(t testing.TB, w Workload, p workloadPlan) CreatedWorkload {
	t.Helper()
	var out CreatedWorkload
	out.Owner = s.create(t, "/apis/apps/v1/namespaces/"+w.Namespace+"/deployments", map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment", "metadata": p.meta,
		"spec": map[string]any{"replicas": p.replicas, "selector": p.selector, "template": podTemplate(w.Template, p.podLabels)},
	})
	s.patchStatus(t, "/apis/apps/v1/namespaces/"+w.Namespace+"/deployments/"+w.Name, map[string]any{
		"observedGeneration": 1, "replicas": p.active, "updatedReplicas": p.active,
		"readyReplicas": p.ready, "availableReplicas": p.ready, "unavailableReplicas": max(p.replicas-p.ready, 0),
	})
	rsLabels := map[string]string{"pod-template-hash": p.hash}
	maps.Copy(rsLabels, p.podLabels)
	rsName := w.Name + "-" + p.hash
	out.ReplicaSet = s.create(t, "/apis/apps/v1/namespaces/"+w.Namespace+"/replicasets", map[string]any{
		"apiVersion": "apps/v1", "kind": "ReplicaSet",
		"metadata": map[string]any{
			"name": rsName, "namespace": w.Namespace, "labels": rsLabels,
			"annotations": map[string]string{
				"deployment.kubernetes.io/revision":         "1",
				"deployment.kubernetes.io/desired-replicas": strconv.Itoa(p.replicas),
				"deployment.kubernetes.io/max-replicas":     strconv.Itoa(p.replicas + 1),
			},
			"ownerReferences": []map[string]any{ownerReference(out.Owner)},
		},
		"spec": map[string]any{
			"replicas": p.replicas,
			"selector": map[string]any{"matchLabels": map[string]string{"app": p.podLabels["app"], "pod-template-hash": p.hash}},
			"template": podTemplate(w.Template, rsLabels),
		},
	})
	s.patchStatus(t, "/apis/apps/v1/namespaces/"+w.Namespace+"/replicasets/"+rsName, map[string]any{
		"observedGeneration": 1, "replicas": p.active, "fullyLabeledReplicas": p.active,
		"readyReplicas": p.ready, "availableReplicas": p.ready,
	})
	tmpl := w.Template
	tmpl.Labels = rsLabels
	for i, state := range w.Pods {
		// The ReplicaSet's pods are made from generateName "<rs>-", which
		// the name generator cuts to 58 bytes before its 5 random
		// characters (k8s.io/apiserver/pkg/storage/names).
		prefix := rsName + "-"
		if len(prefix) > 58 {
			prefix = prefix[:58]
		}
		name := prefix + safeHash(rsName+"/"+strconv.Itoa(i), 5)
		out.Pods = append(out.Pods, s.CreatePod(t, w.Namespace, name, tmpl, state, &out.ReplicaSet))
	}
	return out
}

func (s *APIServer) createStatefulSet(t testing.TB, w Workload, p workloadPlan) CreatedWorkload {
	t.Helper()
	var out CreatedWorkload
	out.Owner = s.create(t, "/apis/apps/v1/namespaces/"+w.Namespace+"/statefulsets", map[string]any{
		"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": p.meta,
		"spec": map[string]any{
			"replicas": p.replicas, "selector": p.selector, "serviceName": w.Name,
			"template": podTemplate(w.Template, p.podLabels),
		},
	})
	revision := w.Name + "-" + p.hash
	s.patchStatus(t, "/apis/apps/v1/namespaces/"+w.Namespace+"/statefulsets/"+w.Name, map[string]any{
		"observedGeneration": 1, "replicas": p.active, "currentReplicas": p.active, "updatedReplicas": p.active,
		"readyReplicas": p.ready, "availableReplicas": p.ready,
		"currentRevision": revision, "updateRevision": revision,
	})
	for i, state := range w.Pods {
		name := w.Name + "-" + strconv.Itoa(i)
		tmpl := w.Template
		tmpl.Labels = map[string]string{
			"controller-revision-hash":           revision,
			"statefulset.kubernetes.io/pod-name": name,
			"apps.kubernetes.io/pod-index":       strconv.Itoa(i),
		}
		maps.Copy(tmpl.Labels, p.podLabels)
		out.Pods = append(out.Pods, s.CreatePod(t, w.Namespace, name, tmpl, state, &out.Owner))
	}
	return out
}

// CreatePod creates one pod from tmpl in namespace (created if missing),
// controlled by owner when it is not nil (a Job, a LeaderWorkerSet's
// StatefulSet), bound to state.Node, and sets its status to state
// through the status subresource.
func (s *APIServer) CreatePod(t testing.TB, namespace, name string, tmpl PodTemplate, state PodState, owner *ObjectRef) ObjectRef {
	t.Helper()
	s.ensureNamespace(t, namespace)
	meta := map[string]any{"name": name, "namespace": namespace, "labels": tmpl.Labels, "annotations": tmpl.Annotations}
	if owner != nil {
		meta["ownerReferences"] = []map[string]any{ownerReference(*owner)}
	}
	spec := podSpec(tmpl)
	if state.Node != "" {
		spec["nodeName"] = state.Node
	}
	ref := s.create(t, "/api/v1/namespaces/"+namespace+"/pods", map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec,
	})
	s.patchStatus(t, "/api/v1/namespaces/"+namespace+"/pods/"+name, podStatus(ref, tmpl, state, time.Now().UTC()))
	return ref
}

// SetPodState writes pod's status as its kubelet would for state: phase,
// reason and message, conditions, its first container's state. A pod
// that has ended (Failed, Succeeded) cannot run again: the server refuses
// that change.
func (s *APIServer) SetPodState(t testing.TB, pod ObjectRef, state PodState) {
	t.Helper()
	path := "/api/v1/namespaces/" + pod.Namespace + "/pods/" + pod.Name
	code, resp := s.Do(t, Admin, http.MethodGet, path, nil, "")
	if code != http.StatusOK {
		t.Fatalf("GET pod %s/%s: %d %s", pod.Namespace, pod.Name, code, statusMessage(resp))
	}
	var got struct {
		Spec struct {
			Containers []struct {
				Name  string `json:"name"`
				Image string `json:"image"`
			} `json:"containers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(resp, &got); err != nil || len(got.Spec.Containers) == 0 {
		t.Fatalf("reading the containers of pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	tmpl := PodTemplate{Container: got.Spec.Containers[0].Name, Image: got.Spec.Containers[0].Image}
	s.patchStatus(t, path, podStatus(pod, tmpl, state, time.Now().UTC()))
}

// phase is p's phase, PodRunning when unset.
func phase(p PodState) string {
	if p.Phase == "" {
		return PodRunning
	}
	return p.Phase
}

func podTemplate(tmpl PodTemplate, labels map[string]string) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"labels": labels, "annotations": tmpl.Annotations},
		"spec":     podSpec(tmpl),
	}
}

func podSpec(tmpl PodTemplate) map[string]any {
	c := map[string]any{"name": containerName(tmpl), "image": containerImage(tmpl)}
	if tmpl.GPUs > 0 {
		c["resources"] = map[string]any{"limits": map[string]string{"nvidia.com/gpu": strconv.Itoa(tmpl.GPUs)}}
	}
	spec := map[string]any{"containers": []map[string]any{c}}
	if tmpl.SchedulerName != "" {
		spec["schedulerName"] = tmpl.SchedulerName
	}
	return spec
}

func containerName(tmpl PodTemplate) string {
	if tmpl.Container == "" {
		return "main"
	}
	return tmpl.Container
}

func containerImage(tmpl PodTemplate) string {
	if tmpl.Image == "" {
		return "vllm/vllm-openai:v0.8.5"
	}
	return tmpl.Image
}

// podStatus is the status a kubelet writes for a pod in state.
func podStatus(pod ObjectRef, tmpl PodTemplate, state PodState, now time.Time) map[string]any {
	ts := now.Format(time.RFC3339)
	cond := func(typ, status, reason string) map[string]any {
		c := map[string]any{"type": typ, "status": status, "lastTransitionTime": ts}
		if reason != "" {
			c["reason"] = reason
		}
		return c
	}
	container := map[string]any{
		"name": containerName(tmpl), "image": containerImage(tmpl), "imageID": "",
		"containerID":  fmt.Sprintf("containerd://%x", sha256.Sum256([]byte(pod.UID))),
		"restartCount": 0, "ready": false, "started": false,
	}
	status := map[string]any{"phase": phase(state)}
	if state.Reason != "" {
		status["reason"] = state.Reason
	}
	if state.Message != "" {
		status["message"] = state.Message
	} else if state.Reason == "Evicted" {
		status["message"] = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 92Mi. Container " +
			containerName(tmpl) + " was using 31Gi, request is 0, has larger consumption of memory. "
	}
	if state.Node == "" {
		unscheduled := cond("PodScheduled", "False", "Unschedulable")
		unscheduled["message"] = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
		status["conditions"] = []map[string]any{unscheduled}
		return status
	}
	status["startTime"] = ts
	scheduled := cond("PodScheduled", "True", "")
	switch phase(state) {
	case PodRunning:
		container["ready"], container["started"] = true, true
		container["state"] = map[string]any{"running": map[string]any{"startedAt": ts}}
		status["conditions"] = []map[string]any{
			cond("PodReadyToStartContainers", "True", ""), cond("Initialized", "True", ""),
			cond("Ready", "True", ""), cond("ContainersReady", "True", ""), scheduled,
		}
	case PodPending:
		container["state"] = map[string]any{"waiting": map[string]any{"reason": "ContainerCreating"}}
		status["conditions"] = []map[string]any{
			cond("Initialized", "True", ""), cond("Ready", "False", "ContainersNotReady"),
			cond("ContainersReady", "False", "ContainersNotReady"), scheduled,
		}
	case PodSucceeded:
		container["state"] = map[string]any{"terminated": map[string]any{"exitCode": 0, "reason": "Completed", "startedAt": ts, "finishedAt": ts}}
		status["conditions"] = []map[string]any{
			cond("Initialized", "True", "PodCompleted"), cond("Ready", "False", "PodCompleted"),
			cond("ContainersReady", "False", "PodCompleted"), scheduled,
		}
	case PodFailed:
		conds := []map[string]any{}
		if state.Reason == "Evicted" {
			// Since Kubernetes 1.26 a kubelet marks the pods it evicts.
			conds = append(conds, cond("DisruptionTarget", "True", "TerminationByKubelet"))
		}
		status["conditions"] = append(conds,
			cond("Initialized", "True", ""), cond("Ready", "False", "PodFailed"),
			cond("ContainersReady", "False", "PodFailed"), scheduled)
		container["state"] = map[string]any{"terminated": map[string]any{"exitCode": 137, "reason": "Error", "startedAt": ts, "finishedAt": ts}}
	}
	status["containerStatuses"] = []map[string]any{container}
	return status
}

func ownerReference(o ObjectRef) map[string]any {
	return map[string]any{
		"apiVersion": o.APIVersion, "kind": o.Kind, "name": o.Name, "uid": o.UID,
		"controller": true, "blockOwnerDeletion": true,
	}
}

// safeHash is n (at most 32) characters of a hash of s, in the alphabet
// Kubernetes writes generated names in (no vowels, no 0, 1 or 3): stable
// names for a test's pods and ReplicaSets.
func safeHash(s string, n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	sum := sha256.Sum256([]byte(s))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return string(b)
}

// ensureNamespace creates namespace ns unless it exists.
func (s *APIServer) ensureNamespace(t testing.TB, ns string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]string{"name": ns}})
	code, resp := s.Do(t, Admin, http.MethodPost, "/api/v1/namespaces", body, "")
	if code != http.StatusCreated && code != http.StatusConflict {
		t.Fatalf("creating namespace %s: %d %s", ns, code, statusMessage(resp))
	}
}

// create POSTs obj to the collection at path, strictly validated, and
// returns what names it.
func (s *APIServer) create(t testing.TB, path string, obj map[string]any) ObjectRef {
	t.Helper()
	body, err := json.Marshal(obj)
	if err != nil {
		t.Fatalf("encoding %s: %v", path, err)
	}
	code, resp := s.Do(t, Admin, http.MethodPost, path+"?fieldValidation=Strict", body, "")
	if code != http.StatusCreated {
		t.Fatalf("POST %s: %d %s", path, code, statusMessage(resp))
	}
	var got struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Namespace string `json:"namespace"`
			Name      string `json:"name"`
			UID       string `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(resp, &got); err != nil {
		t.Fatalf("decoding the answer to POST %s: %v", path, err)
	}
	return ObjectRef{got.APIVersion, got.Kind, got.Metadata.Namespace, got.Metadata.Name, got.Metadata.UID}
}

// patchStatus merges status into the status of the object at path,
// through its status subresource.
func (s *APIServer) patchStatus(t testing.TB, path string, status map[string]any) {
	t.Helper()
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatalf("encoding the status of %s: %v", path, err)
	}
	code, resp := s.Do(t, Admin, http.MethodPatch, path+"/status?fieldValidation=Strict", body, "application/merge-patch+json")
	if code != http.StatusOK {
		t.Fatalf("PATCH %s/status: %d %s", path, code, statusMessage(resp))
	}
}
