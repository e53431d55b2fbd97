package patcher_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpu-rightsizing/recommender/internal/patcher"
	"github.com/gpu-rightsizing/recommender/internal/patcher/workload"
)

// exampleRepo writes one manifest into a temporary checkout.
func exampleRepo(name, body string) (string, func()) {
	dir, err := os.MkdirTemp("", "patcher-example")
	if err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
		panic(err)
	}
	return dir, func() { os.RemoveAll(dir) }
}

func ExampleSetGPUFraction() {
	root, cleanup := exampleRepo("chat.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: chat   # the chat assistant
spec:
  template:
    metadata:
      labels:
        app: chat
    spec:
      containers:
      - name: vllm
        image: vllm/vllm-openai:v0.8.5
        args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu-memory-utilization", "0.9"]
`)
	defer cleanup()
	ctx := context.Background()
	inv, err := patcher.Discover(ctx, root)
	if err != nil {
		panic(err)
	}
	res, err := patcher.Apply(ctx, root, inv, []patcher.Edit{{
		Workload: inv.Workloads[0].Ref,
		Reason:   "peak 0.31 of a GPU over 7 days + 20% headroom",
		Ops:      []workload.Op{patcher.SetGPUFraction("0.38"), patcher.SetVLLMMemoryUtilization("0.34")},
	}})
	if err != nil {
		panic(err)
	}
	fmt.Print(string(res.Files[0].New))
	for _, c := range res.Files[0].Changes {
		fmt.Printf("%s: %q -> %q\n", c.Field, c.Old, c.New)
	}
	// Output:
	// apiVersion: apps/v1
	// kind: Deployment
	// metadata:
	//   name: chat   # the chat assistant
	// spec:
	//   template:
	//     metadata:
	//       labels:
	//         app: chat
	//       annotations:
	//         gpu-fraction: "0.38"
	//     spec:
	//       containers:
	//       - name: vllm
	//         image: vllm/vllm-openai:v0.8.5
	//         args: ["--model", "Qwen/Qwen2.5-7B-Instruct", "--gpu-memory-utilization", "0.34"]
	// spec.template.metadata.annotations.gpu-fraction: "" -> "0.38"
	// spec.template.spec.containers[vllm].args: "0.9" -> "0.34"
}
