package consolidate_test

import (
	"fmt"
	"strings"

	"github.com/gpu-rightsizing/recommender/internal/consolidate"
	"github.com/gpu-rightsizing/recommender/internal/policy"
	"github.com/gpu-rightsizing/recommender/internal/usage"
)

// poolA is the policy of most cases: the nodes labelled pool=a, the
// guide's default threshold. Its selector is the policy loader's own, so
// the tests also hold that one to the interface the package declares.
func poolA() consolidate.Policy {
	return consolidate.Policy{
		Name:             "pool-a",
		Nodes:            &policy.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
		ThresholdPercent: policy.DefaultConsolidationUtil,
	}
}

func node(name string, gpus int, pool string) consolidate.Node {
	return consolidate.Node{Name: name, GPUs: gpus, Labels: map[string]string{"pool": pool}, Model: "L4"}
}

// pod is a pod of workload ns/Deployment/<name without its last -part>,
// on node at the given devices (none: unknown).
func pod(key, node string, share consolidate.Share, devs ...int) consolidate.Pod {
	ns, name, _ := strings.Cut(key, "/")
	w := name
	if i := strings.LastIndex(name, "-"); i > 0 {
		w = name[:i]
	}
	return consolidate.Pod{Namespace: ns, Name: name, Node: node, Devices: devs, Share: share,
		Workload: usage.Ref{Namespace: ns, Kind: "Deployment", Name: w}}
}

func frac(f float64) consolidate.Share { return consolidate.Fraction(f, 1) }

func ref(key string) usage.Ref {
	ns, name, _ := strings.Cut(key, "/")
	return usage.Ref{Namespace: ns, Kind: "Deployment", Name: name}
}

func moveText(m consolidate.Move) string {
	return fmt.Sprintf("%s %s→%s (%s)", m.Pod, m.From, m.To, m.Reason)
}
