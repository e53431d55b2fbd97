{{- define "stack.engine" -}}
{{ .release }}-{{ .model.name }}-deployment-vllm
{{- end }}
