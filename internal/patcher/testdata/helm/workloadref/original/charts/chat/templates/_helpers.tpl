{{- define "chat.fullname" -}}
{{ .Release.Name }}
{{- end }}
