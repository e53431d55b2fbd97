package openmetrics_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpu-rightsizing/recommender/internal/metrics/metricstest"
	"github.com/gpu-rightsizing/recommender/internal/testenv/kubeenv"
)

// quickstartPolicies are the policies the CLI row plans with.
const quickstartPolicies = "../../../examples/quickstart/policies/kai-gpu-sharing.yaml"

// writeFleetRepo writes a repository of fl's Deployments, each the pod of
// the recording of fl names, under the quickstart's policies. The policies
// read memory from the series the recording holds (metricstest.Mem), so
// that the plan keeps every series of the file, as the open does: its
// proactive baseline reads a week.
func writeFleetRepo(b *testing.B, dir string, fl fleet) string {
	pol, err := os.ReadFile(quickstartPolicies)
	if err != nil {
		b.Fatal(err)
	}
	pol = []byte(strings.Replace(string(pol), "kubex_gpu_container_memory_footprint_percent", metricstest.Mem, 1))
	write := func(rel string, data []byte) {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("policies/kai-gpu-sharing.yaml", pol)
	for d := range fl.pods {
		name, _, _, ns := fl.pod(d)
		y := kubeenv.Deployment(name)
		y = strings.Replace(y, "  namespace: serving\n", "  namespace: "+ns+"\n", 1)
		y = strings.Replace(y, "- name: vllm\n", "- name: server\n", 1)
		// The policies select Deployments that say they use a GPU.
		y = strings.Replace(y, "    kai.scheduler/queue: serving\n", "    kai.scheduler/queue: serving\n    nvidia.com/gpu.present: \"true\"\n", 1)
		write(fmt.Sprintf("apps/%s/%s.yaml", ns, name), []byte(y))
	}
	return dir
}

// planCommand is `recommender plan` of repo with the recording at path,
// its plan in JSON.
func planCommand(bin, repo, path string) *exec.Cmd {
	return exec.Command(bin, "plan", "--repo", repo, "--metrics-file", path, "-o", "json")
}

// checkPlan fails b unless the plan out decided on each of pods Deployments.
func checkPlan(b *testing.B, out string, pods int) {
	var p struct {
		Decisions []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		b.Fatalf("plan: %v", err)
	}
	if len(p.Decisions) != pods {
		b.Fatalf("plan decided on %d workloads, want %d", len(p.Decisions), pods)
	}
}
