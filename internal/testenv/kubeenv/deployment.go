package kubeenv

import "fmt"

// Deployment is a ~45-line GPU Deployment as people write them — comments,
// labels, the GPU-opt-in label, a vLLM container with flags — named name:
// the unit the benchmarks of reading and editing a repository repeat.
func Deployment(name string) string {
	return fmt.Sprintf(`# %[1]s: inference server
apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  namespace: serving
  labels:
    app: %[1]s
    kai.scheduler/queue: serving
spec:
  replicas: 2
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
        nvidia.com/gpu.present: "true"
      annotations:
        gpu-fraction: "0.5" # last set by the bot
        prometheus.io/scrape: "true"
    spec:
      schedulerName: kai-scheduler
      containers:
        - name: vllm
          image: vllm/vllm-openai:v0.8.5
          args:
            - --model
            - Qwen/Qwen2.5-7B-Instruct
            - --gpu-memory-utilization
            - "0.45"
            - --max-model-len
            - "8192"
          ports:
            - containerPort: 8000
              name: http
          readinessProbe:
            httpGet:
              path: /health
              port: http
            periodSeconds: 5
      volumes:
        - name: shm
          emptyDir: {medium: Memory}
`, name)
}
