package workload

import (
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/gpu-rightsizing/recommender/internal/kai"
	"github.com/gpu-rightsizing/recommender/internal/patcher/splice"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// DynamoKind is NVIDIA Dynamo's nvidia.com/v1alpha1 DynamoGraphDeployment
// (ai-dynamo/dynamo, deploy/cloud/operator/api/v1alpha1). It is not one
// workload but a graph of them: each entry of spec.services becomes a
// DynamoComponentDeployment, and a Deployment, of its own, with its own
// replicas and GPUs, so each service is sized as a workload of its own.
const DynamoKind = "DynamoGraphDeployment"

// Identified is one workload a document defines, and how to read it.
type Identified struct {
	Ref  usage.Ref
	Spec Spec
	// Object is the object that defines it: the workload itself, or the
	// DynamoGraphDeployment whose service Service is. A Kustomize patch
	// or a chart names the object, not the service.
	Object  usage.Ref
	Service string
}

// InObject is the workload that service of object is: the object itself
// when service is "", else the workload of a DynamoGraphDeployment's
// service (see DynamoServiceName). Where a build renames the object, the
// workload is renamed with it.
func InObject(object usage.Ref, service string) usage.Ref {
	if service == "" {
		return object
	}
	object.Name = DynamoServiceName(object.Name, service)
	return object
}

// IdentifyAll returns the workloads a document root defines: none, the
// one Identify finds, or one per service of a DynamoGraphDeployment.
func IdentifyAll(root *yaml.Node) []Identified {
	if ref, spec, ok := Identify(root); ok {
		return []Identified{{Ref: ref, Spec: spec, Object: ref}}
	}
	if !isDynamo(root) {
		return nil
	}
	md := splice.Lookup(root, "metadata")
	name, ns := splice.Str(md, "name"), splice.Str(md, "namespace")
	svcs := splice.Lookup(root, "spec", "services")
	if svcs == nil || svcs.Kind != yaml.MappingNode {
		return nil
	}
	var out []Identified
	for i := 0; i+1 < len(svcs.Content); i += 2 {
		k := svcs.Content[i]
		if k.Kind != yaml.ScalarNode || k.Value == "<<" {
			continue
		}
		obj := usage.Ref{Kind: DynamoKind, Namespace: ns, Name: name}
		out = append(out, Identified{Ref: InObject(obj, k.Value), Spec: dynamoSpec(k.Value), Object: obj, Service: k.Value})
	}
	return out
}

// DynamoServiceName is the name the operator gives what it creates for a
// service (its DynamoComponentDeployment, and the Deployment that runs
// the service's pods): GetDynamoComponentName in the operator's graph.go,
// "<graph>-<service, lowercased>". Naming the workload so lets its pods
// be attributed by the Deployment's name.
func DynamoServiceName(graph, service string) string {
	return graph + "-" + strings.ToLower(service)
}

// dynamoSpec is how to read service key of a DynamoGraphDeployment: the
// operator gives extraPodMetadata's labels and annotations to the pods,
// lays extraPodSpec (an inline pod spec) over the pod spec it builds, and
// its mainContainer over the container it runs the service in.
func dynamoSpec(key string) Spec {
	return Spec{groups: []string{"nvidia.com"}, dynamo: true,
		Template: Pod{Path: []string{"spec", "services", key}, Meta: []string{"extraPodMetadata"},
			Spec: []string{"extraPodSpec"}, Serving: []string{dynamoMain}, Resources: []string{"resources"}}}
}

// dynamoMain is the key of a service's extraPodSpec that is laid over
// the container the operator runs the service in.
const dynamoMain = "mainContainer"

// dynamoMainName labels the main container when the service does not
// name it: the operator names it main.
const dynamoMainName = "main"

// dynamoAPIVersion is the version of DynamoGraphDeployment read: later
// operators store nvidia.com/v1beta1, whose services are a list of
// components with pod templates, and still serve this one.
const dynamoAPIVersion = "nvidia.com/v1alpha1"

func isDynamo(root *yaml.Node) bool {
	return root != nil && root.Kind == yaml.MappingNode && splice.Str(root, "kind") == DynamoKind &&
		splice.Str(root, "apiVersion") == dynamoAPIVersion
}

// dynamoGPUs reads the whole GPUs a service asks for: the gpu count of
// its resources.limits, else of its requests, a string the operator turns
// into the main container's nvidia.com/gpu. A count that is not a whole
// number is an error, never "no GPU".
func dynamoGPUs(root *yaml.Node, p Pod) (int64, error) {
	for _, list := range []string{"limits", "requests"} {
		v := splice.Lookup(root, join(p.Path, "resources", list, "gpu")...)
		if v == nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(v.Value), 10, 64)
		if v.Kind != yaml.ScalarNode || err != nil || n < 0 {
			return 0, fmt.Errorf("%w: line %d: %s %q is not a whole number of GPUs", ErrInvalidValue, v.Line, dotted(join(p.Path, "resources", list, "gpu")), v.Value)
		}
		return n, nil
	}
	return 0, nil
}

// dynamoLeftAlone says why a service is not sized: a multinode service
// runs a leader and workers across nodes (a LeaderWorkerSet or Grove
// PodCliques the operator builds), whose GPUs are its gpu count on every
// node; they are not the one Deployment a workload here stands for.
func dynamoLeftAlone(root *yaml.Node, p Pod) error {
	if n := splice.Lookup(root, join(p.Path, "multinode")...); n != nil {
		return fmt.Errorf("%w: line %d: %s is set: the service runs on several nodes as a group, which is not sized, so it is left alone",
			ErrUnsizedPods, n.Line, dotted(join(p.Path, "multinode")))
	}
	return nil
}

// dynamoServiceAnnotation says why a service whose own annotations (not
// its extraPodMetadata's) carry one of KAI's is read but not sized: the
// operator (v0.5.1) gives a service's annotations to its pods when Grove
// runs them (generateAnnotations, internal/dynamo/graph.go) and not when
// a DynamoComponentDeployment does (generatePodTemplateSpec takes
// extraPodMetadata's alone), so what the pods ask for depends on the
// cluster, which the repository does not say.
func dynamoServiceAnnotation(root *yaml.Node, p Pod) error {
	ann := splice.Lookup(root, join(p.Path, "annotations")...)
	for _, name := range []string{kai.FractionAnnotation, kai.MemoryAnnotation, kai.NumDevicesAnnotation, kai.ContainerNameAnnotation} {
		if k, _ := splice.Field(ann, name); k != nil {
			return fmt.Errorf("%w: line %d: %s is in %s; it is read but not edited: write it in %s, which reach the pods in every mode",
				ErrServiceAnnotation, k.Line, name, dotted(join(p.Path, "annotations")), dotted(p.meta("annotations")))
		}
	}
	return nil
}

// readDynamoGPUs adds to g what a Dynamo service asks for beyond its
// containers: its resources.gpu count, which goes to its main container,
// and why it is left alone.
func readDynamoGPUs(root *yaml.Node, p Pod, g *GPU) {
	n, err := dynamoGPUs(root, p)
	if err == nil {
		err = dynamoLeftAlone(root, p)
	}
	if err == nil {
		err = dynamoServiceAnnotation(root, p)
	}
	if err != nil && g.Err == nil {
		g.Err = err
	}
	if n > g.Whole {
		g.Whole = n
	}
	if n > 0 && len(g.WholeContainers) == 0 {
		g.WholeContainers = []string{dynamoMainName}
	}
}

// serviceField is the field name of a Dynamo service's field rest.
func (d *podEdit) serviceField(rest ...string) string { return dotted(join(d.pod.Path, rest...)) }

// setDynamoGPUs sets a Dynamo service's gpu count in resources.limits,
// and in requests where it is written: the operator reads them as strings,
// so the count is quoted.
func (d *podEdit) setDynamoGPUs(n int64) error {
	svc, err := d.template()
	if err != nil {
		return err
	}
	if n < 1 {
		return d.Fail(svc, d.serviceField("resources", "limits", "gpu"), fmt.Errorf("%w: %d whole GPUs", ErrInvalidValue, n))
	}
	if left := dynamoLeftAlone(d.Root, d.pod); left != nil {
		return d.Fail(svc, d.serviceField("multinode"), left)
	}
	v := strconv.FormatInt(n, 10)
	if err := d.SetString(svc, d.serviceField("resources", "limits", "gpu"), []string{"resources", "limits", "gpu"}, v, splice.ScalarOpts{Quote: true}); err != nil {
		return err
	}
	if splice.Lookup(svc, "resources", "requests", "gpu") != nil {
		return d.SetString(svc, d.serviceField("resources", "requests", "gpu"), []string{"resources", "requests", "gpu"}, v, splice.ScalarOpts{Quote: true})
	}
	return nil
}
